// Package client is a Go client of the snowfence HTTP service (package
// server, `snowfence serve`) that makes an ID cost about what the embedded
// library costs: it fetches IDs in batches (POST /v1/ids?count=N) into a
// buffer ahead of need and hands them out one by one, and it retries and
// fails over across an ordered list of endpoints.
//
//	c, err := client.New(client.Config{Endpoints: []string{
//		"https://ids.eu-west.corp", // the local region first
//		"https://ids.us-east.corp", // a backup region after
//	}})
//	...
//	defer c.Close()
//	id, err := c.Next(ctx)
//
// It speaks only the HTTP API and imports nothing of the server.
//
// # The buffer
//
// IDs received are handed out in the order received, each exactly once.
// When Next leaves the buffer at or below its low-water mark it asks for
// one refill in the background; at most one refill runs at a time. A
// refill's size follows the rate at which the caller took IDs since the
// last one, aiming for one refill every Config.RefillPeriod: it at most
// doubles or halves from one refill to the next, and stays between
// Config.MinRefill and the room left in the buffer (Config.MaxBuffer). A
// refill larger than 1,000 IDs is several requests, one after another,
// each response's IDs handed out as soon as it arrives. When the buffer is
// empty, Next waits for the refill in flight, or starts one.
//
// # Age
//
// A buffered ID expires Config.MaxAge after the request that fetched it
// was sent, and is then dropped, never handed out; see Config.MaxAge for
// what the age costs a caller that sorts by ID or reads time from it.
//
// # Order
//
// IDs come out of one Client in the order they went into its buffer. The
// IDs of one response are strictly increasing (the client checks), and the
// responses of one server come one after another, so while one server
// answers, every ID the Client hands out is greater than the one before,
// and the IDs each goroutine gets increase too. Across a failover they do
// not: the backup region's server mints from its own clock and machine
// number, so its IDs may be smaller than the primary's last ones, and two
// Clients' IDs interleave in no particular order. Only the server's
// timestamps order IDs, and only as far as clocks agree.
//
// # Never twice, never invented
//
// Only IDs from a 200 whose whole body parsed as exactly the batch asked
// for are buffered: a response cut short (a dropped connection, a
// timeout), malformed, out of order or of the wrong count yields no IDs,
// whatever part of it arrived. Each buffered ID is handed out at most once;
// IDs dropped for age, by Close, or by a NextN that failed are never
// handed out.
//
// The client cannot know every ID ever issued, so by default it trusts the
// servers (and any proxy between) not to answer with IDs they answered
// before: a replayed response would be handed out again. With
// Config.Schedule set it refuses such an answer: it remembers the last ID
// received from each machine number and refuses an answer that does not
// start above it (see Config.Schedule for why that never refuses a sound
// answer).
//
// # Retries and failover
//
// A failed request (503 or another 5xx, 429, a connection error or timeout,
// a malformed answer) is retried after a jittered exponential wait that is
// at least the answer's Retry-After (up to Config.MaxRetryAfter); the wait
// starts small again the first time a refill fails over from each
// endpoint; a 4xx
// other than 429 is not retried and is returned (matching ErrRejected).
// After Config.MaxAttempts requests a refill gives up, and the callers
// waiting on it get an *UnavailableError holding the last failure.
//
// Requests go to the first endpoint in service. Config.FailureThreshold
// consecutive failures take an endpoint out of service (a 429 does not
// count: the endpoint is well, the caller is over its quota), and the next
// request goes at once to the next endpoint in service. Endpoints out of
// service are probed on /healthz (or Config.HealthURLs) every
// Config.ProbeInterval; Config.RecoveryProbes consecutive 200s put one back
// in service, so the client returns to a better endpoint only once it has
// proved healthy. When no endpoint is in service, requests go to each in
// turn, and the first that answers is back in service.
//
// # Public IDs
//
// MintPublicIDs mints new IDs sealed into public IDs of a type (POST
// /v1/public-ids:mint, on a server with a keyset): each ID with the text
// that opens to it (docs/public-ids.md), in one request that bypasses the
// buffer, retried and failed over like a refill. It needs no permission
// to seal IDs of the caller's choosing, which the client does not offer.
//
// # Concurrency
//
// A Client is safe for concurrent use. It runs two goroutines, the refill
// and the probes, which Close stops.
package client
