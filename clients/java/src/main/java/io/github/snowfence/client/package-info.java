/**
 * A client of the snowfence ID service ({@code snowfence serve}): IDs fetched
 * in batches into a buffer ahead of need, handed out from memory, with
 * retries and failover across an ordered list of endpoints; the Go client's
 * semantics (package {@code client} of the snowfence module).
 *
 * <p>Start at {@link io.github.snowfence.client.SnowfenceClient}; IDs in text
 * with {@link io.github.snowfence.client.Ids}; taking an ID apart with
 * {@link io.github.snowfence.client.Schedule}. Every exception is a
 * {@link io.github.snowfence.client.SnowfenceException}.
 */
package io.github.snowfence.client;
