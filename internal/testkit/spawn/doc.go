// Package spawn starts, reaps and tails the child processes of the tests
// and of the chaos suite: the soak tests' holder processes
// (internal/testkit/soaktest), the chaos suite's services and library holders
// (harness/chaos), its etcd member processes (harness/chaos/etcdproc)
// and Debian's etcd (internal/testkit/etcdtest). One Start, one Proc, one set of
// rules:
//
//   - On Linux every child gets a parent-death signal of SIGKILL (unless
//     its command sets another), so a crashed parent leaves no child behind.
//   - The child's standard output goes to Config.Stdout, a reader running
//     on a goroutine of its own, or, without one, where its standard error
//     goes. Standard error is kept in a ring of its last Config.TailBytes
//     (Proc.Tail: where a crashed child's last words are) and copied to
//     Config.Output; neither can stall the child on a full pipe.
//   - The process is reaped once its standard output has been read to the
//     end; Proc.Done closes then. Every wait (Proc.Wait, Proc.Kill,
//     Proc.Stop) has a bound.
//   - With Config.Group the child leads a process group of its own, and
//     Kill and Stop reach every process in it.
//
// A Proc is safe for concurrent use.
package spawn
