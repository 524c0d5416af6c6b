package io.github.snowfence.client;

import java.util.List;

/**
 * A snapshot of a client's counters ({@link SnowfenceClient#stats()}).
 * Every ID received is handed out, expired, discarded or still buffered:
 * {@code received == handedOut + expired + discarded + buffered}.
 *
 * @param buffered  the IDs in the buffer (expired ones not yet dropped included)
 * @param handedOut the IDs returned by next and nextN
 * @param received  the IDs of every 200 taken into the buffer
 * @param expired   the IDs dropped for age: those that reached maxAge in the
 *                  buffer, and those a nextN had taken and held while it
 *                  waited for a refill, once the oldest of them reached maxAge
 * @param discarded the IDs dropped by close or by a nextN that failed
 * @param requests  the mint requests that brought IDs
 * @param failures  the mint requests that did not
 * @param endpoint  the index of the endpoint requests go to now (the first in
 *                  service), or -1 when none is in service
 * @param inService per endpoint, whether it is in service
 */
public record Stats(int buffered, long handedOut, long received, long expired, long discarded, long requests,
        long failures, int endpoint, List<Boolean> inService) {
}
