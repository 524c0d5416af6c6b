// Package explore is the search for the next duplicate: a randomized,
// seed-reproducible exploration test that runs the real lease.Keeper and
// snowfence.Generator against the real lease stores — etcdstore on an
// embedded etcd (internal/testkit/etcdtest), pgstore on the PostgreSQL at
// $SNOWFENCE_TEST_POSTGRES_URL, dynamostore on the dynalite at
// $SNOWFENCE_TEST_DYNAMODB_ENDPOINT through internal/testkit/dynashim, which makes
// dynalite return the old item on a failed condition and lose replies after
// a committed write, as DynamoDB and a network can, zkstore on a ZooKeeper
// server of its own (internal/testkit/zktest) — on fake clocks
// (package fakeclock), and checks on every ID minted that no two are equal
// and that each generator's IDs strictly increase.
//
// # A world
//
// Each seed, with a store kind, builds one world (all its random choices
// come from the seed):
//
//   - processes, each with one fake clock (an offset, a rate between 0.92
//     and 1.08) and one to four keeper+generator pairs (holders); the
//     keepers of a process share its timings and its holder string when
//     the process says so — an explicit KeeperConfig.Holder, or the default
//     left empty — or each have a unique one;
//   - an entry point per process, through which it starts its holders
//     (see Entry points below);
//   - regions 0 to 2, one store object per process and region, and machine
//     ranges that overlap (0–1, 0–3, 1–4, 0–7) so holders fight for
//     numbers; one store (a registry world has two or three, see below);
//   - the fleet schedule written in the store before any holder claims
//     (lease.SetSchedule on an operator clock two hours before the world
//     starts, so that its notice is over when T comes), mostly the default
//     v1, sometimes v1,v2@T with T inside the run, sometimes a fleet in
//     which one process runs another schedule than the store's;
//   - timings drawn from what KeeperConfig accepts (LeaseFor, RenewEvery,
//     SelfFence, Reserve, Margin, MaxAhead, RestoreMargin), sometimes just
//     outside it: a configuration the product refuses at start (keeper,
//     generator or store) is counted as refused, which is the outcome
//     wanted, and the holder sits the world out (in a registry world a
//     refusal that depends on the registry is tried again, see below).
//
// Then a bounded number of steps, each an action drawn from the seed:
// let true time pass on every clock or one (a clock's wall reading is
// stepped back to true time, as NTP would, once its error passes 250 ms);
// mint a batch (NextN of 1 to 1000, or Next) on one holder or on all;
// step a wall clock back or forward; change a rate; pause a process (its
// clock and its minting stop while the others go on past its leases, then
// its clock jumps by the time it missed); lose replies after the call ran
// (a lease.Store wrapper for etcd, PostgreSQL and ZooKeeper, the shim's
// DropNextReplies for DynamoDB); cut a process off from its stores for a
// few steps (the wrapper fails every call without making it); restart a
// process (Close every keeper, start them again together), or restart it
// afresh, its stores opened anew with no memory of the store, as a process
// started just after a restore (one follows half the restores of the
// restores and cut-off themes: it cannot notice the restore, and claims
// numbers running holders still issue on); clone a holder
// process, in worlds without restores (clone_test.go: its lease, grant and
// generator position copied, renewing through a Store value of its own and
// minting whenever its original does — the duplicates the two mint before
// each has renewed once since are the clone's window and let through,
// counted in the figures; any later one is a finding); snapshot the
// store and later restore it — etcd with and without a new cluster token
// and with and without a revision bump; PostgreSQL by copying the table's
// rows aside and writing them back; DynamoDB by scanning the table aside
// and writing it back; ZooKeeper by a cold copy of the server's data
// directory (the server stopped, copied, started) put back the same way,
// zxids and znode versions repeating as after a real restore (the copy is
// server-wide: the worlds of a run are sequential and one at a time holds
// a space on the server). A restore the store cannot detect (every table
// restore, and every ZooKeeper restore: a Store value notices one only by
// what it saw of the later state, and a process started afresh saw
// nothing — zkstore's doc, "What a restore looks like") is followed, before any holder talks to the store again, by the
// runbook's operator step: RaiseMarks over every range in use to the
// latest clock plus the longest restore window of any holder (its lease
// counted as a reservation: a table's claim writes its mark LeaseFor
// ahead). An etcd
// restore is one the store must detect, so no operator step follows it
// (now and then it is run anyway).
//
// Every world may also build a second generator on a running holder's
// keeper (see Entry points).
//
// Synchronisation uses no sleeps: after moving a clock the test waits
// (fakeclock.BlockUntilWaiters, bounded in real time) until every keeper
// on it is asleep again; the generators mint on a clock that, instead of
// blocking for the next millisecond, moves its fake clock there.
//
// # Entry points
//
// A process starts its holders through one of the ways the product
// exports, drawn per process (entry_test.go): mostly lease.StartKeeper
// followed by snowfence.New, as a program embedding the library does;
// a fifth of the time node.Start with Config.Store set to the process's
// store object (Start then opens nothing and applies no store timings,
// so the keeper gets the same KeeperConfig, and Start gives it the
// generator's clock, the one that moves instead of waiting — except
// for Start's own wait for the first grant, the store's notice window or a
// restore's floor, which blocks while true time moves on for every
// process, as it does while a real node starts); a tenth
// of the time node.Start with the service in front — package server's
// handler over the node's generator, on an httptest server on loopback —
// where the holder's batches are POSTs to /v1/ids (?count=N). The action
// "another generator on a keeper" calls snowfence.New once more on a
// running holder's keeper (the one StartKeeper returned, or
// node.Node.Keeper): it must be refused with snowfence.ErrLeaseBound,
// which counts as refused; if it is accepted (the revert tag
// snowfence_revert_bind), the holder mints on both generators at once and
// on the new one whenever it mints from then on, its IDs in the ledger
// like any other. Not driven: node.Start opening a store of its own
// (Config.Open, the embedded etcd), snowfence serve's command line and
// flags, the client package, and the service's other routes.
//
// # Registry worlds
//
// A world of the registry theme (registry_test.go) runs two or three
// independent stores of its kind — key prefixes of their own on the one
// etcd cluster (a store's identity, RegistryIdentity, is the cluster ID
// with the registry key under its prefix), tables of their own on
// PostgreSQL and DynamoDB (the identity names the table), paths of their
// own on the one ZooKeeper server — named store-a,
// store-b, store-c, and the region registry kept across them, written
// with package lease's own functions as snowfence regions and schedule
// set write it (the commands' few lines of their own, such as recording
// the stores' schedule, are mirrored in the test, which cannot import
// package main):
//
//   - before the start, on an operator clock two hours before it: every
//     store's fleet schedule record, v1,v2@T with T 6 to 30 seconds into the
//     world or half an hour before it; the registry created over all
//     stores or all but the last (a late store), regions r0, r1, r2 added
//     with their homes (registry.Update with Registry.WithRegionHome,
//     regions add --create --home), r2 sometimes retired (RetireRegion);
//     and, in most worlds, one store's record set apart — a copy's alone
//     with lease.SetSchedule after the registry recorded the fleet's, or
//     the late store's own — to v2 from half an hour before the start or
//     a second or so into it, or v1 until T when the fleet's T is past;
//   - processes in regions 0 to 2, now and then 3 (the next region an
//     operator adds) or 5 to 7 (never added), on their region's home store
//     mostly, else another; on their own store's record as schedule
//     mostly, else the registry's; and, in most worlds, the first two
//     drawn into one of two paths to a duplicate: one region's holders on
//     two stores, each store handing out the same v2 numbers; or a holder
//     of region t on v2 number 0 on the store whose v2 comes first beside
//     one of region 0 on v1 number 128t on a store still on v1 (v1 number
//     128t's first 1024 IDs of a millisecond have v2 region t number 0's
//     bits);
//   - operators while holders run, as actions: regions add (with a home:
//     a process's store, a late store joined or not, or any copy),
//     regions add-copy of the late store (JoinRegistry; its record may
//     differ) followed mostly by regions add --home it, one regions
//     retire, and one schedule set on one copy alone in the second half
//     (lease.SetSchedule; within the world its difference is never
//     reached, as the notice puts it an hour away, but the copy's record
//     and its registry differ from then on). The product's refusals are
//     counted (operator refused: …), and the world goes on.
//
// A holder starts only on a store that holds a copy of the registry (a
// store outside it is another fleet, whose IDs nothing can keep apart
// from this one's); until its store joins it waits, and so does a holder
// of a region other than 0 until its schedule has v2 in force on its
// clock. A refusal that depends on the registry or the schedules (an
// unknown or retired region, a store that is not the region's home, a
// schedule the registry or the store does not have) may be tried again
// by a later start, since operators change both. Registry worlds keep
// their clocks mostly in step, pause and cut processes off less, and
// never snapshot or restore (a restore of the registry's copies with the
// leases is not searched). Their ledger spans every store: the IDs of a
// world are one ID space.
//
// # The journal oracle
//
// Every store writes a lease journal entry in each claim's own atomic
// write (lease.Journal); snowfence who answers from it which holder minted
// an ID. The search checks that answer too: every 50 steps, before each
// restore (which takes the claims since its snapshot away), at the end of
// the world and once every holder has closed, it draws up to 300 IDs of
// the world's ledger (from a random source of the seed's own, apart from
// the actions'), adds the first and last ID of every holder generation,
// decodes each under its minter's schedule, reads the journal and record
// of its number in the keyspace that leased it (lease.KeyspaceOf of the
// layout step and the holder's region, or the region for a schedule of
// one step) of the store the minter leased from, on a store object of its
// own, and fails with EXPLORE JOURNAL if
//
//   - a number's intervals (lease.Intervals) overlap (lease.CheckIntervals);
//   - lease.Who names a holder whose string is not the minter's (holders
//     may share one; the string must still match), unless a restore took
//     the number's later history away: the ID was minted at or after the
//     snapshot it wrote back, below its raise mark (see below), and the
//     holder named claimed before that snapshot — the restore brought its
//     entry back with the mark it had reserved then, above timestamps the
//     minter issued in the history taken away (snowfence who cannot tell
//     such IDs apart, which the figures count);
//   - an ID of a layout with region bits carries another region than its
//     minter's (snowfence who reads the keyspace of the ID's region);
//   - an ID is not in the journal (lease.ErrNotInJournal) without one of
//     the reasons that take history away: the number's journal holds
//     lease.JournalRetention entries and the ID is older than the oldest;
//     the ID was minted at or after the snapshot a restore wrote back and
//     lies below that restore's raise mark (the latest clock plus the
//     longest restore window: no claim the restore took away had a mark
//     above it), counted as raise-marks when it lies in the gap a raise
//     left; a claim of the number whose reply was lost (on DynamoDB, any
//     reply the shim dropped). A raise of the marks alone takes nothing
//     away: it ends the holding at the mark the holder held.
//
// The figures count the IDs checked, those answered with their holder and
// those not in the journal by reason (an ID drawn at several checks counts
// at each). TestJournalOracleFails, in the default and short runs, proves
// the oracle can fail: with a store that leaves the oldest entry of every
// number out of History, a few short etcd worlds must end in EXPLORE
// JOURNAL. A store whose journal is not built yet (History fails with "the
// journal is not built yet") has its journal checks skipped, with a note
// in the world's log and the figures.
//
// In a registry world the oracle reads the store the minter leased from,
// which is not always the store snowfence who would ask (the home of the
// ID's region): a holder on another region's store is checked against
// the journal that store kept of it. That the two stores handed out the
// same numbers is the ledger's finding, not the oracle's.
//
// # Where the search looks harder
//
// The draws are biased, not scripted, towards the regions of the space
// where duplicates were found before: each world first draws a theme, and
// the theme raises the odds of the matching choices:
//
//   - regions: the fleet on v1 (no region bits), processes of regions 1
//     and 2 in turn on a range of two or four numbers;
//   - shared holders: keepers of one process with one holder string,
//     started and restarted together (on DynamoDB through the shim);
//   - restores: two or three processes of one keeper each, with timings of
//     their own so that their renewals fall apart, a range with about as
//     many numbers as holders, and the snapshot taken before the first
//     claim restored again and again (etcd: mostly under the same cluster
//     token with a revision bump that grows with each restore), so that a
//     holder that renews first finds every number free and takes another
//     holder's while that one still mints; "let time pass on one process"
//     and "mint on every holder" more often, pauses and lost replies less;
//   - cut-off holders: the long timings of a serving holder (a 30 s lease,
//     mostly a 20 s or 30 s reserve, and a 20 s self-fence on the tables,
//     6 s on etcd, near the longest its notice window admits) shared by every
//     process, so that the claimer that notices a restore has the cut-off
//     holder's restore window, and each restore cutting one process off
//     for 10 to 40 steps while the other notices it;
//   - schedules: a cutover two to twelve seconds after the start, one
//     process on another schedule than the fleet's (v1 holders beside
//     v1,v2@T ones, whose v2 machine 4m+j shares its low 22 bits with v1
//     machine m), every number of the range 1-4 or 0-7 held, and more
//     restarts, which move holders between numbers;
//   - cutovers: a fleet crossing v1 → v2 in region 0, with v1 ranges
//     beyond, across or within v2's machine bits and v2 ranges too small
//     for some keepers (cutovers in config_test.go);
//   - registry: two or three stores and their region registry (see
//     Registry worlds);
//   - anything.
//
// On etcd, the restores and cut-off themes come up more often (the table
// stores cannot notice a restore, so the operator step follows each).
// Clocks mostly start in step (offset 0) and "let time pass on every
// clock" and "mint on every holder" are frequent, because two holders
// collide only in the same millisecond.
//
// # What is and is not reproduced
//
// A seed reproduces the configuration and the sequence of actions. The
// fake clocks start at the real time of the run, because an etcd lease's
// TTL runs on real time, and concurrent keepers on one clock race for
// real, so the outcome of a step can differ between two runs of one seed.
//
// # Running it
//
// By default (and with -short, which scripts/test and .ci/run use) it runs
// a fixed list of seeds per store (60 on PostgreSQL, 20 on DynamoDB, 15 on
// etcd, 5 on ZooKeeper, 3 on Kubernetes, the stores in parallel), under a
// minute on two cores (ZooKeeper's worlds, whose restores restart a JVM, run apart in
// scripts/test, which sets SNOWFENCE_TEST_ZOOKEEPER_LATER for its race
// run: testenv.ZooKeeperLater). The search is
// part of the harness module (harness/, a Go module of its own, so that
// go test ./... at the root never compiles it); these commands run there:
//
//	go test ./explore -short
//
// A failure prints the seed, the store, the whole configuration and the
// last 50 actions, and the line to run that seed alone; a duplicate names
// both minters (process, entry point, region, store, schedule, layout)
// and the path it looks like: two generators on one keeper, one region
// leased in two stores, a v1 and a v2 ID with the same bits, or another.
//
//	go test ./explore -run TestSearch -seed 17 -store etcd -v
//
// -explore.theme draws worlds only in the themes it names (a seed that
// draws another takes one of them), in the fixed list, one seed or the
// long mode:
//
//	go test ./explore -run TestSearch -timeout 0 -v -explore.theme registry \
//	    -explore.duration 5m -explore.stores postgres -explore.seed 1
//
// The long mode runs seeds, one world after another per store, until the
// time is up, and prints its figures (seeds run, configurations by theme,
// IDs checked, refusals, restores, replies dropped). The stores run as
// parallel subtests: give -parallel 3, or on a two-core machine go test
// runs only two at once and the third waits for one to finish:
//
//	go test ./explore -run TestSearch -timeout 0 -parallel 3 -v \
//	    -explore.duration 1h -explore.stores etcd,postgres,dynamodb,zookeeper -explore.seed 1000
//
// A store whose service is missing is skipped locally and fails under
// CI=true (internal/testkit/testenv). scripts/prove-search builds the search with
// each revert tag of internal/revert and requires it to find a duplicate
// (the long mode from seed 1 with -explore.first, within a budget: whether
// a world meets its duplicate can depend on how its keepers race, see
// above, so the proof searches rather than replays a fixed list), and ends with a table of the seed that found it, how many seeds were
// tried and the time per tag.
package explore
