// Package soaktest is the shared machinery of the multi-process soak tests
// of the lease stores (etcd, PostgreSQL, DynamoDB): child holder processes
// that re-execute the test binary, the parent that reads what they send
// and kills or pauses them on a seeded schedule, and the checks on every ID
// they sent.
//
// # The child
//
// A parent starts a child with Spawn (through package internal/testkit/spawn, which
// starts, tails and reaps every child process of the module's tests): it
// re-executes its own test binary running one test (the child's body,
// which calls ChildMain) with a JSON configuration in an environment
// variable. The child runs holders (a lease.Keeper and a generator each,
// see RunHolders) and reports each event as one flushed frame of package
// internal/testkit/wire on its standard output, through an Out:
//
//	claimed <holder> <machine> <token>  a keeper's first claim
//	noclaim <holder> <error>            StartKeeper failed (retried)
//	ids <holder> <id> <id> …            one batch, in issue order
//	fenced <holder> <error>             a batch refused with ErrFenced
//	refused <holder> <error>            a batch refused for another reason
//	stats 0 <n> …                       store-specific request counts
//	echo 0 <text>                       a line the parent wrote to stdin
//	fatal 0 <error>                     the child could not start
//
// (kind, holder, then values or a text: the frames as Frame.String shows
// them in a test log). <holder> is the holder's index in its process.
// Frames are written whole under one lock and flushed at once, so a frame
// the parent reads was sent whole, a torn one at the end of a killed
// child's stream is dropped, and a killed child's unsent IDs never reach
// the parent. The child exits when its stdin closes (the parent ended or
// is done with it; its holders release their numbers), when its lifetime
// runs out, or with its parent (SIGKILL on parent death).
//
// # The parent
//
// Soak.Run starts the child processes, SIGKILLs (and, with Pauses, now and
// then SIGSTOPs) a random one on a schedule drawn from SNOWFENCE_SOAK_SEED
// (or the clock; the seed is logged), collects every ID sent with a
// Collector, and checks with Check that no ID occurs twice, that no two
// holders stamped the same millisecond on the same number, and that each
// holder's IDs strictly increase.
//
// The package is Linux-only (SIGSTOP, Pdeathsig, /proc) and has no init
// side effects.
package soaktest
