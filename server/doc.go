// Package server is the snowfence HTTP service: one *snowfence.Generator
// behind a small JSON API, with health, readiness and Prometheus metrics.
//
//	POST /v1/ids                 one ID:    {"id":"97301141913751557","id_num":97301141913751557} (no body, {} or null)
//	POST /v1/ids?count=N         N IDs:     {"ids":["…",…]} in increasing order, 1 ≤ N ≤ 1000
//	POST /v1/ids:batch           N IDs, the count in the body: {"count":N} (or in ?count=N)
//	GET  /v1/ids/{id}/decode     the ID taken apart by the schedule
//	POST /v1/public-ids:mint     mint N IDs sealed: {"type":"order","count":N} → {"ids":["…",…],"public_ids":["order_…",…]}
//	POST /v1/public-ids          seal IDs, for callers allowed to: {"type":"order","ids":["…",…]} → {"public_ids":["order_…",…]}
//	GET  /v1/public-ids/{pid}    open one: {"id":"…","type":"order","key_version":"2"}, for callers allowed to
//	GET  /healthz                200 while issuing, 503 with the reason while refusing
//	GET  /readyz                 200 while issuing and not draining, else 503
//	GET  /livez                  200 while alive, 503 only when the lease keeper's loop is wedged (livez.go)
//	GET  /metrics                Prometheus text exposition
//	GET  /openapi.json           the OpenAPI 3.1 description (package api)
//	GET  /                       the status page, for a browser (its files under /status/)
//	GET  /v1/status              what the page shows, as JSON; GET /v1/status/decode/{id} is its decoder
//
// Each route takes its one method: HEAD is 405, as api/openapi.json, which
// describes no HEAD, says. With an admin listener (AdminHandler beside
// APIHandler) each route answers 404 not_found on the handler that does not
// serve it. Over a caller's quota, the minting
// endpoints answer 429 rate_limited with Retry-After; nothing is issued.
//
// # Public IDs
//
// With Config.PublicIDKeys (package publicid), POST /v1/public-ids:mint
// mints up to 1000 IDs and answers each with its sealed public ID of one
// type, for any caller Config.Quota admits; POST /v1/public-ids seals up
// to 1000 IDs of the caller's choosing, for callers Config.PublicIDSealers
// allows, since deterministic sealing tests any guess of the ID behind a
// public ID (PublicIDSealers); and GET /v1/public-ids/{pid} opens one, for
// callers Config.PublicIDOpeners allows. Each ID minted or sealed costs
// one ID of the quota; a caller without the permission gets 403 forbidden,
// answered before the body or ID is read.
// Text that is not the form of a sealed ID is a 400 invalid_public_id; a
// forged or altered ID, and one under a key version that is retired or not
// in the keyset, are one 404 public_id_not_found, so an answer relayed
// outside tells nobody which key versions exist or whether a text was ever
// genuine. Without a keyset the three routes answer 501 public_ids_disabled: a
// server missing its keyset is a fault of the server, which 5xx alerting
// should see, not a client's mistake. Sealing and opening need no
// generator, but while the service is starting they are refused like the
// other API routes.
//
// # IDs in JSON
//
// IDs travel as strings, because JavaScript numbers are exact only up to
// 2^53 − 1. The single-ID response also carries id_num, an exact 64-bit
// integer literal written with strconv, never through float64; it is
// deprecated in api/openapi.json (deprecated: true, no format int64, which
// JavaScript tools cap at 2^53 − 1), so that clients generated from it steer
// every caller to id.
//
// Every answer that carries IDs says Cache-Control: no-store: a cache or
// proxy that replayed one would hand the same IDs out twice.
//
// # Errors
//
// Every error body is {"error":{"code":"…","message":"…"}} with a stable,
// machine-readable code (see the constants Code…); a refusal to mint also
// carries "reason", the generator's short cause (e.g. "no-lease"). A refused
// mint is a 503 with Retry-After, never a 200 with a bad ID.
//
// # Requests
//
// Batch bodies are strict JSON objects whose only member is "count" (field
// names are case-sensitive, unknown fields, duplicates and trailing data are
// refused); a body must say Content-Type: application/json (415
// invalid_content_type without one or with another); a body without fields,
// {} or null, is the same request as no body; bodies over
// Config.MaxBodyBytes are refused with 413. The count may instead be given as
// ?count=N, but not both.
//
// POST /v1/ids takes no body, or a body without fields: the empty object
// {}, which many HTTP clients send on every POST, or null, which clients
// generated from api/openapi.json send for a body they were given none for
// (oapi-codegen marshals a nil map). Either is the same request as no body
// (one ID, or N with ?count=N). White space around and inside it is allowed,
// as JSON allows it. Any other body is refused with invalid_body, even
// {"count":N}, which belongs to POST /v1/ids:batch; so are {}{}, {} with
// anything after it and []. POST /v1/uuids takes the same. On POST
// /v1/ids:batch a body without fields leaves the count to ?count=N (what a
// generated client sends when the count is in the query: its body's count
// field unset), and without the query the count is missing (invalid_count);
// a count given in the body is a count given, so {"count":0} is out of range
// and {"count":N} beside ?count=N conflicts. The one-ID request without a
// body allocates nothing in the handler; {} costs one scan of its bytes.
//
// The server sets no timeouts of its own: the http.Server that serves
// Handler should set ReadHeaderTimeout, ReadTimeout and IdleTimeout. A
// request whose context ends while the generator waits (for the next
// millisecond, or a small clock step back) returns at once; the server starts
// no goroutines per request.
//
// # Listeners
//
// Handler serves every route on one listener. A service that gives health
// and metrics a listener of their own serves APIHandler on its main listener
// and AdminHandler on the admin one: /healthz, /readyz, /livez and /metrics
// only on the admin listener (plain HTTP, for load balancers, orchestrators'
// probes and Prometheus, which
// hold no caller certificate), and with them the status page; everything
// else only on the main one, each
// answering 404 not_found, naming the other listener, for the other's
// routes. So whatever guards the main listener, such as mutual TLS, guards
// every route it serves, and the admin listener exposes nothing that mints.
// The handlers share the server's state and metrics; a request answered 404
// for its listener counts as endpoint "unmatched".
//
// # Status page
//
// GET / is a page for the operator's browser, its HTML, CSS and
// JavaScript embedded (statuspage/) and held by its Content-Security-Policy
// to the server's own origin. It polls GET /v1/status every second: this
// holder's state (the health's, the lease keeper's token and mark, the
// clock sync in milliseconds, the issued counter for IDs per second), the
// fleet (Config.Fleet, read at most once a second; without it the page says
// the fleet is not available) and the schedule's layouts, from which it
// draws the 64 bits of an ID that GET /v1/status/decode/{id} decoded (the
// same answers as GET /v1/ids/{id}/decode). These routes go with the admin
// routes: on AdminHandler, not on APIHandler, since holder names carry host
// names and a browser holds no caller certificate. The page is served while
// the service is starting too, its status saying why it does not issue yet.
//
// # Starting
//
// A service whose keeper claims in the background (package service: while
// it claims its first machine number, or as a spare waiting for every held
// number's holder to let one go) serves its Server from the start and tells
// it, through Config.Starting, that it has not started issuing: /healthz and
// /readyz answer 503 with code "starting", reason "starting" or
// "no-free-number" and the last claim's error as detail; the minting,
// decode, UUID and public-ID routes answer 503 starting with Retry-After;
// /livez, /metrics, /openapi.json and the status page are served. From the first
// moment it has started, every answer is the generator's.
//
// # Concurrency
//
// A Server is safe for concurrent use; its handler serves any number of
// requests at once.
package server
