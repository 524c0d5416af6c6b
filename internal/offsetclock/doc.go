// Package offsetclock is for fault-injection tests only: it wraps a
// snowfence.Clock and adds a settable offset to the wall clock, so a test can
// step a running process's wall clock back or forward without touching the
// machine's clock. Production code must not use it.
//
// libfaketime does not reach Go's clock reads (the runtime reads the vDSO
// directly), and stepping the host clock disturbs every other process on
// it; an offset inside the process steps only the process under test.
//
// # Wall and monotonic clocks
//
// The offset applies to wall readings alone, never to the monotonic ones,
// exactly as an NTP step or an operator's date command moves CLOCK_REALTIME
// and leaves CLOCK_MONOTONIC alone. Sleep, which runs on the monotonic clock,
// is unaffected; WaitUntil waits for the offset wall clock and notices an
// offset changed while it waits.
//
// # Control endpoint
//
// Clock.Handler serves the offset over HTTP:
//
//	GET  → 200 {"offset_ms":N}
//	POST {"offset_ms":N} sets it, {"step_ms":N} adds to it
//	     → 200 {"offset_ms":<new>}
//
// "snowfence serve --test-clock-offset" mounts it at /test/clock-offset. The
// flag is off by default and must stay off in production: anyone who can
// reach the endpoint can move the process's clock.
//
// # Concurrency
//
// A Clock is safe for concurrent use. The offset is read with one atomic
// load, so Now costs little more than the base clock's Now.
package offsetclock
