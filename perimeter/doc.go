// Package perimeter is the identity perimeter of the snowfence HTTP service
// (package server): mutual TLS that names each caller, a callers file that
// says who may connect and how many IDs per second each may take, and the
// per-caller metrics. Everything reloads when its file changes.
//
//	p, err := perimeter.New(perimeter.Config{
//		CertFile: "server.crt", KeyFile: "server.key", ClientCAFile: "callers-ca.crt",
//		CallersFile: "callers.json", Registerer: reg, Logger: log,
//	})
//	srv, err := server.New(server.Config{Generator: gen, Quota: p.Quota(), Registerer: reg})
//	hs := &http.Server{Handler: srv.Handler(), TLSConfig: p.TLSConfig(), ConnContext: p.ConnContext}
//	hs.ServeTLS(ln, "", "")
//
// # Identity
//
// A caller is whoever its certificate names (Identity): the first URI SAN,
// normally a SPIFFE ID such as spiffe://corp/orders, if it is an absolute
// URI; else, when there is no URI SAN, the first DNS SAN if it is a host
// name, lower-cased. The two kinds cannot be mistaken for one another: a
// host name holds no ':' and an absolute URI does, so neither a DNS SAN
// spelled "spiffe://corp/orders" (crypto/x509 takes any string as a DNS
// SAN) nor a URI SAN "billing.corp" without a scheme names a caller, and
// the callers file accepts only identities of one kind or the other. The
// certificate must chain to a CA in the client-CA bundle (crypto/tls
// checks it, expiry included: ClientAuth is RequireAndVerifyClientCert); a
// certificate that names no caller is refused at the handshake.
//
// # Authorization at every handshake
//
// Whether an identity may connect at all is decided in
// tls.Config.VerifyConnection, which crypto/tls runs on every handshake,
// resumed sessions included; VerifyPeerCertificate is skipped when a session
// resumes, so a check there would let a caller removed from the callers file
// back in on a session ticket from before. With "default": "deny" an
// identity the callers file does not list is refused at the handshake and
// never reaches the service. A connection made before a reload removed its
// caller gets 403 "forbidden" on its next request.
//
// # Trust on open connections
//
// crypto/tls verifies the caller's chain, against the client CAs and the
// clock, only at a handshake, and a kept-alive or HTTP/2 connection may not
// handshake again for hours. So the perimeter holds open connections to the
// same rules per request (Perimeter.Take): after a reload of the client-CA
// bundle each connection's chain is verified again against the new pool,
// once, on its next request, and every request compares the wall clock
// with the chain's validity, cached at the handshake. A connection whose
// CA left the bundle, or whose certificate expired since its handshake,
// gets 403 "forbidden" (ErrUntrusted) and issues nothing; if the CA comes
// back, so does the connection. This holds with mutual TLS whether or not
// there is a callers file (Quota is not nil with either).
//
// # Reloading
//
// The certificate and key, the client-CA bundle and the callers file are
// read every Config.PollInterval and compared with the last read by
// content (SHA-256), so an in-place write (even one keeping the size and
// modification time), a rename over the file and a Kubernetes Secret's
// symbolic-link swap are all seen. Only regular files are read, after
// following symbolic links, opened non-blocking and checked on the
// descriptor (ErrNotRegularFile: a named pipe cannot block a reload, nor
// /dev/zero fill memory), each up to its cap (MaxPEMFileSize,
// MaxCallersFileSize; ErrFileTooLarge). A changed file is loaded whole and
// checked before it takes effect: the certificate and key must parse and
// match and the certificate must be valid now; a PEM file may hold nothing
// but whole certificates (a half-written one is an error, not a shorter
// chain or bundle); the callers file must parse. A file that fails keeps
// the last good configuration in force and is logged once per distinct
// failure; the metrics show it until it clears. The certificate and key
// swap together, atomically, once they match. Each handshake takes the
// configuration in force at its start, so a rotation drops no connection
// and fails no request. Files are read under a lock of their own, so a
// slow read holds up no handshake, request or SetHolders, and Close waits
// for a reload under way for at most 2 s.
//
// # Quotas
//
// Each caller has a token bucket (golang.org/x/time/rate) at its policy's
// rate in IDs per second, holding up to its burst; a batch of n IDs takes n,
// so every burst is at least the largest batch (1,000). A reload changes a
// caller's limits in place, keeping its tokens. A request that does not fit
// gets 429 "rate_limited" with Retry-After and the draft IETF RateLimit
// fields (see Perimeter.Take) and takes nothing from the bucket; a granted
// request whose mint then fails (503) gives its tokens back (all of them,
// or fewer when other grants came in meanwhile: never more). A caller's
// requests meet its bucket one at a time, each at a time no earlier than
// the one before (a clock reading that went stale on its way is moved up),
// so concurrent requests never credit the same interval twice: over any
// span of time d a caller keeps at most burst + rate × d IDs. Callers not
// listed get the file's default policy, each a bucket of its own (up to
// 10,000 such identities; past that they share one), or are refused. The
// default is per identity, not a limit for the unlisted together: a caller
// holding certificates for many identities the CA will sign gets a full
// default bucket for each, up to 10,000 times the default. For real limits
// use "default": "deny" and list every caller.
// Without TLS every request is the one anonymous caller, under the default.
//
// A caller's policy is its quota across the fleet. The perimeter cannot see
// the other holders' buckets, so it enforces the policy's share
// (Policy.Share) for the count of live holders SetHolders last gave it:
// the rate divided by the count, the burst too but never below the largest
// batch. Package service counts the holders in the lease store as the
// keeper renews (lease.CountHolders); a library user without it calls
// SetHolders itself, or gets per-process quotas (a count of 1). A caller
// pinned to one holder gets that holder's share. See fleet.go for what a
// change of the count does to the buckets.
//
// # Metrics
//
// Registered on Config.Registerer: IDs issued, requests throttled and
// callers refused, by caller; the count of holders the quotas are divided
// among; and, by file, reloads (snowfence_perimeter_reloads_total), whether
// the file fails to load (snowfence_perimeter_reload_failing) and when it
// was last read and found in force
// (snowfence_perimeter_reload_last_success_timestamp_seconds). Only identities listed in the callers file
// get a label value of their own; all others are "(unlisted)", and a
// certificate with no identity "(none)", so no caller can grow /metrics
// by presenting new names. Handshakes crypto/tls refuses before the
// perimeter sees them (no certificate, an unknown CA, an expired
// certificate) are not counted here; http.Server logs them.
//
// # Concurrency
//
// A Perimeter is safe for concurrent use. On the request path it takes one
// context lookup to find the connection's cached caller (ConnContext), a
// comparison of the wall clock with the chain's cached validity, and the
// bucket's mutex; a granted request allocates the one *rate.Reservation
// that lets it be cancelled. A reload costs each open connection one
// lookup (callers file) or one chain verification (client CAs) on its
// next request; two requests racing on one HTTP/2 connection may both do
// it.
package perimeter
