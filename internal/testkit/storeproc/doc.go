// Package storeproc runs the lease-table servers the chaos suite
// (harness/chaos) and the cold-copy restore tests of pgstore and
// dynamostore (package coldrestore) break: a PostgreSQL cluster of its own
// (Postgres), a dynalite, the local DynamoDB stand-in, with its data on
// disk (Dynalite), and a standalone ZooKeeper server (ZooKeeper: killed,
// frozen, copied cold and restored, and restored aside on a port of its
// own for the operator's step). Each runs on a free
// loopback port in a directory of its own, never the oracle's PostgreSQL
// nor the test services' shared dynalite, so that stopping, freezing or
// restoring it disturbs nothing else.
//
// # Faults
//
// Both can be stopped hard and started again on the same port and data
// (PostgreSQL: pg_ctl stop -m immediate, a crash without a checkpoint;
// dynalite: SIGKILL), and frozen: every process of the server gets
// SIGSTOP, as when its host or VM is paused. For PostgreSQL that is the
// postmaster and every process it started — a stopped postmaster alone
// still lets the backends of open connections answer, which is not a
// failure any deployment meets. A PostgreSQL cluster can also take a base
// backup (pg_basebackup) and later be restored from it: stopped, its data
// directory replaced by the backup, started again, first reachable only on
// its Unix socket (for the operator step that must run before holders
// reach it, see docs/runbook.md) and then on TCP. Both can also be copied
// cold (stopped, the data directory copied as files: CopyData) and later
// put back on that copy (Restore), which nothing in the server shows
// (copy.go).
//
// # Durability
//
// The PostgreSQL cluster runs with fsync off: the faults here kill
// processes, not the machine, and what a process wrote to the kernel
// survives it. The lease store's sessions still commit synchronously
// (pgstore.Connect), so every acknowledged write is in the WAL before the
// holder hears of it. dynalite keeps its tables in a LevelDB directory
// (--path), which likewise survives a SIGKILL.
//
// # Privileges
//
// PostgreSQL refuses to run as root: under root the cluster belongs to the
// postgres user and its programs run through runuser. The programs come
// from /usr/lib/postgresql/*/bin (Debian's postgresql package; the newest
// version there). dynalite runs under node from the npm cache that
// scripts/services/dynalite.sh fills (SNOWFENCE_CACHE, default
// ~/.cache/snowfence); start that script once to install it.
package storeproc
