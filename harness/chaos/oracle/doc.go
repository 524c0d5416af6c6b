// Package oracle is the duplicate oracle of the fault-injection suite: every
// ID a node acknowledged goes into a real PostgreSQL table whose PRIMARY KEY
// is the judge of uniqueness, and the oracle reports exactly how many IDs
// were issued more than once, with examples naming every source that issued
// them. Duplicates checks the same in memory, so a scenario has two
// independent witnesses.
//
// # The table
//
// Open drops and re-creates the table (Config.Table, default "chaos_ids"):
//
//	CREATE UNLOGGED TABLE chaos_ids (id BIGINT PRIMARY KEY, source INT NOT NULL)
//
// It is UNLOGGED: no write-ahead log, which saved 15–20% of the server's
// CPU per row in BenchmarkCopy on the test server (fsync off; more where
// WAL reaches a real disk). A PostgreSQL crash empties an unlogged table —
// acceptable for a table that lives one scenario, and not silent: Close
// would then find fewer rows than it received and report a mismatch. Close
// drops the table unless Config.Keep.
//
// # Fast and slow paths
//
// Add copies the IDs into batches of Config.Batch; one background writer
// sends each batch with one binary COPY straight into the table. While no
// ID repeats, that is all the work there is. When a COPY fails with
// unique_violation (SQLSTATE 23505) nothing of the batch was written, and
// the writer redoes it the slow way, in one transaction: COPY into a
// session-local staging table, read every ID of the batch that repeats
// within it or is already in the table (with the earlier row's source and
// the batch's sources), then INSERT … SELECT DISTINCT ON (id) … ON CONFLICT
// (id) DO NOTHING. The number of extra copies is exact however many times an
// ID repeats, and it is checked twice: against the rows the INSERT wrote,
// and at Close against count(*) of the table (Rows = Received − Duplicates).
// A slow batch costs about 0.35 s for 50,000 rows on the test server,
// whatever the table's size: the slow path probes the primary key once per
// ID rather than joining the table. Any other error is fatal: every later
// Add and Close return it, since an oracle that silently drops rows is
// worse than none.
//
// # One writer
//
// The oracle writes over one connection. On the suite's 2-core machine
// (BenchmarkCopy, 1M IDs, batches of 50,000) one connection COPYs 0.5–0.85
// million rows/s, depending on what else runs. Two connections in parallel
// reached 1.1 million when the machine was otherwise idle, but spent 15–35%
// more server CPU per row (both insert at the right-hand edge of one
// primary-key B-tree, since IDs grow with time) and, with other work
// competing for the two cores as it does during a run, were slower
// (0.4–0.55 million). One writer also keeps the slow path exact and simple:
// nothing else writes the table between its SELECT and its INSERT, sources
// are listed in the order received, and no two COPYs can deadlock on each
// other's keys.
//
// # Backpressure
//
// The IDs accepted but not yet written — the batch being filled, the queued
// batches and the batch being written — never exceed Config.MaxQueued
// (default 4,000,000, about 48 MB): Add blocks until the writer catches up.
// At 0.5–0.8 million rows/s, a full queue takes Close 5–8 s to drain.
// A stalled database therefore stalls the scenario instead of growing the
// heap without bound.
//
// # Concurrency
//
// An Oracle is safe for concurrent use by multiple goroutines. Close ends
// it; after Close, Add and Close return ErrClosed.
package oracle
