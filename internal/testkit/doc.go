// Package testkit is the test kit of the product module: the helpers that
// the product's tests and the harness module (harness/) import. The
// snowfence binary never links any of it, nor does any non-test file
// of the product (layout_test.go checks both, and that every other
// package in internal/ is one the binary links).
//
// Its packages:
//
//   - etcdtest: real etcd servers for tests — clusters of embedded etcd
//     members (1 or 3) with stop, restart, snapshot and restore, and
//     Debian's etcd executable for interop tests; etcdmember, the members'
//     configuration, shared with the chaos suite's member processes.
//   - k8stest: a real kube-apiserver (Kubernetes v1.37.2, built by
//     scripts/services/kube-apiserver.sh) over an embedded etcd member,
//     for the Kubernetes lease store: restricted service-account tokens,
//     stop, kill, freeze, and restore from an etcd backup.
//   - storeproc: a test's own PostgreSQL cluster and dynalite (data on
//     disk), to stop, freeze, copy and restore; coldrestore, holders
//     running through a cold-copy restore of a lease table's server
//     (pgstore's and dynamostore's TestColdCopyRestoreWhileHoldersRun).
//   - dynashim: a proxy that makes dynalite answer as DynamoDB does (the
//     old item on a failed condition, replies lost after a committed
//     write).
//   - soaktest: the multi-process soak tests of the stores; spawn, the one
//     helper that starts, tails and reaps every child process; wire, the
//     one frame format in which child holders report.
//   - testenv: the servers scripts/test starts for the tests, and the rule
//     that under CI=true a missing one fails a test rather than skipping
//     it; freeport, slots, syncbuf and testpki: free loopback ports, a
//     bound on how many tests of one kind run at once, child-output
//     buffers, throwaway CAs and certificates.
//
// The chaos suite, its command and the search for the next duplicate are
// not here but in the harness module (harness/), which imports this kit.
package testkit
