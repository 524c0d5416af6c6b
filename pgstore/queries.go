package pgstore

import (
	"strconv"
	"strings"

	"github.com/snowfence/snowfence/lease"
)

// queries are the store's statements for one table. $1 is always the
// region and $2 (except in RaiseMarks) the machine number.
type queries struct {
	create                                  []string
	claim, extend, release, get, list, scan string
	quarantine, unquarantine, raise         string
	raiseLock, history, giveBack            string
	fleet, fleetInit, fleetSet, why, origin string
	// unusedLock and unused are SetFleetScheduleUnused's check.
	unusedLock, unused                  string
	registry, registryInit, registrySet string
	registryIdentity                    string
}

// What RaiseMarks and a restore write into claim_nonce of the rows whose
// holder they fence, so that the fenced holder's next Extend can say why.
// No claim attempt's nonce (32 hex digits) is either.
const (
	fencedByRaise   = "fenced by raise-marks"
	fencedByRestore = "fenced by a restore"
)

// identitySQL reads which cluster and which history the server is on: its
// system identifier (pg_control_system; a new cluster, as from initdb and
// a dump restored into it, has a new one) and the timeline of the WAL it
// writes now, from the name of the current WAL file (a promoted standby
// and a point-in-time recovery start a new timeline at once; the timeline
// of pg_control_checkpoint changes only at the next checkpoint, so it can
// lag a failover). Both are readable by every role on PostgreSQL 15, and
// pg_current_wal_lsn fails on a standby, where the store cannot write
// anyway.
const identitySQL = `SELECT (SELECT system_identifier::text FROM pg_catalog.pg_control_system()) AS sysid,
	('x' || substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::bigint AS tl`

// newQueries returns the statements on table (quoted), its fleet-schedule
// table, its origin table, its registry table and its journal. ident is
// the statement that reads the server's identity (identitySQL outside
// tests).
func newQueries(table, fleet, origin, registry, journal, ident string) queries {
	// {quarantined} and {far} are the holder and the lease expiry of a
	// quarantined row (lease.QuarantineHolder, lease.QuarantineExpiryMs);
	// {keep} is lease.JournalRetention, the journal's slots per number;
	// {nowms} is the server's clock in Unix ms (a journal entry's
	// ended_ms, for people only).
	q := func(s string) string {
		return strings.NewReplacer("{t}", table, "{f}", fleet, "{o}", origin, "{r}", registry, "{j}", journal, "{ident}", ident,
			"{quarantined}", "'"+lease.QuarantineHolder+"'", "{far}", strconv.FormatInt(lease.QuarantineExpiryMs, 10),
			"{keep}", strconv.Itoa(lease.JournalRetention),
			"{nowms}", "(extract(epoch FROM statement_timestamp()) * 1000)::bigint").Replace(s)
	}
	// The clauses that compare what keeps claims apart are the fence's
	// (fence_*.go): the fleet schedule, the registry's agreement with it,
	// the claim's nonce, the renewal value and the server's origin.
	sched, claim, renewal, same := scheduleMatches, claimMatches, renewalMatches, sameOrigin
	readCommitted := readCommittedClause()
	regLock, regAgrees := registryAgrees()
	return queries{
		create: []string{q(`CREATE TABLE IF NOT EXISTS {t} (
	region       integer     NOT NULL CHECK (region >= 0),
	machine_id   integer     NOT NULL CHECK (machine_id >= 0),
	holder       text        NOT NULL DEFAULT '',
	lease_expiry bigint      NOT NULL DEFAULT 0,
	lease_epoch  bigint      NOT NULL DEFAULT 0,
	floor_ms     bigint      NOT NULL DEFAULT 0,
	claim_nonce  text        NOT NULL DEFAULT '',
	claim_seq    bigint      NOT NULL DEFAULT 0,
	renewal      text        NOT NULL DEFAULT '',
	updated_at   timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (region, machine_id)
)`),
			q(`ALTER TABLE {t} ADD COLUMN IF NOT EXISTS claim_nonce text NOT NULL DEFAULT ''`),
			q(`ALTER TABLE {t} ADD COLUMN IF NOT EXISTS claim_seq bigint NOT NULL DEFAULT 0`),
			q(`ALTER TABLE {t} ADD COLUMN IF NOT EXISTS renewal text NOT NULL DEFAULT ''`),
			// The journal: slot seq mod {keep} of each number holds its
			// claim number seq (see "The journal" in the package documentation).
			q(`CREATE TABLE IF NOT EXISTS {j} (
	region       integer     NOT NULL,
	machine_id   integer     NOT NULL,
	slot         integer     NOT NULL CHECK (slot >= 0 AND slot < {keep}),
	seq          bigint      NOT NULL CHECK (seq >= 1),
	lease_epoch  bigint      NOT NULL,
	claim_nonce  text        NOT NULL,
	holder       text        NOT NULL,
	claimed_ms   bigint      NOT NULL,
	prev_mark_ms bigint      NOT NULL,
	start_ms     bigint      NOT NULL,
	end_kind     text        NOT NULL DEFAULT '' CHECK (end_kind IN ('', 'released', 'quarantined', 'raised')),
	end_ms       bigint      NOT NULL DEFAULT 0,
	ended_ms     bigint      NOT NULL DEFAULT 0,
	claimed_at   timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (region, machine_id, slot),
	CHECK (slot = seq % {keep})
)`),
			q(`CREATE TABLE IF NOT EXISTS {f} (
	id         integer     PRIMARY KEY CHECK (id = 1),
	schedule   text        NOT NULL,
	version    bigint      NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now()
)`),
			q(`CREATE TABLE IF NOT EXISTS {o} (
	id                integer     PRIMARY KEY CHECK (id = 1),
	system_identifier text        NOT NULL,
	timeline          bigint      NOT NULL,
	restores          bigint      NOT NULL DEFAULT 0,
	floor_ms          bigint      NOT NULL DEFAULT 0,
	noticed_ms        bigint      NOT NULL DEFAULT 0,
	detail            text        NOT NULL DEFAULT '',
	noticed_at        timestamptz NOT NULL DEFAULT now()
)`),
			q(`INSERT INTO {o} (id, system_identifier, timeline) SELECT 1, sysid, tl FROM ({ident}) AS ident ON CONFLICT (id) DO NOTHING`),
			q(`CREATE TABLE IF NOT EXISTS {r} (
	id         integer     PRIMARY KEY CHECK (id = 1),
	version    bigint      NOT NULL CHECK (version >= 1),
	body       jsonb       NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now()
)`),
		},
		// $3 holder, $4 claimer's now, $5 lease length (ms), $6 MaxAhead
		// (ms), $7 this attempt's nonce, $8 the claimer's schedule, $9 its
		// restore window (ms), $10 the floor of a restore the store
		// noticed in the rows (0: none; signs.go). It
		// claims only while the server is the one the origin row records
		// and the schedules agree — the claimer's with the fleet schedule
		// record, and the record with the registry's (regAgrees); the
		// origin's floor (set when a restore was noticed) is a floor of
		// every claim. $10 is one too, and is written into the origin's
		// floor (saved) if higher, so that every other process's claims
		// start above it as well. It claims only in a READ COMMITTED
		// transaction (readCommitted, fence_isolation.go). It always returns
		// one row: the claim's columns (NULL if nothing was claimed), the
		// server's identity and the origin row's, whether the origin is
		// the same, and the transaction's isolation.
		//
		// The claim's journal entry is written by the same statement (entry):
		// claim number claim_seq + 1 — or one past the journal's newest
		// entry of the number, if that is higher (the row was deleted and
		// made again, or the lease table was restored without its
		// journal) — into slot seq mod {keep}, replacing the entry
		// {keep} claims older. The row's claim_seq is read and written
		// under the row's lock, so two claims of one number never get one
		// seq, whatever the statement's snapshot saw of the journal.
		claim: q(`WITH ident AS MATERIALIZED ({ident}),
same AS MATERIALIZED (` + same("$9::bigint", "$10::bigint") + `)` + regLock + `,
saved AS (
	UPDATE {o} SET floor_ms = $10::bigint WHERE id = 1 AND floor_ms < $10::bigint RETURNING 1
),
c AS (
	INSERT INTO {t} AS r (region, machine_id, holder, lease_expiry, lease_epoch, floor_ms, claim_nonce, claim_seq)
	SELECT $1, $2, $3, $4::bigint + $5::bigint, 1, same.floor_ms, $7,
	       (SELECT COALESCE(max(seq), 0) + 1 FROM {j} WHERE region = $1 AND machine_id = $2) FROM same
	 WHERE ` + sched("$8") + regAgrees + ` AND ` + readCommitted + `
	ON CONFLICT (region, machine_id) DO UPDATE
	   SET holder = EXCLUDED.holder,
	       lease_expiry = GREATEST(r.lease_expiry, EXCLUDED.lease_expiry),
	       lease_epoch = r.lease_epoch + 1,
	       floor_ms = GREATEST(r.floor_ms, r.lease_expiry, EXCLUDED.floor_ms),
	       claim_nonce = EXCLUDED.claim_nonce,
	       claim_seq = GREATEST(r.claim_seq + 1, EXCLUDED.claim_seq),
	       renewal = '',
	       updated_at = now()
	 WHERE r.holder <> {quarantined}
	   AND (r.lease_expiry < $4::bigint OR (r.holder = '' AND r.lease_expiry - $4::bigint <= $6::bigint))
	RETURNING lease_epoch, lease_expiry, floor_ms, claim_seq
),
entry AS (
	INSERT INTO {j} AS e (region, machine_id, slot, seq, lease_epoch, claim_nonce, holder, claimed_ms, prev_mark_ms, start_ms)
	SELECT $1, $2, c.claim_seq % {keep}, c.claim_seq, c.lease_epoch, $7, $3, $4::bigint, c.floor_ms, GREATEST($4::bigint, c.floor_ms) FROM c
	ON CONFLICT (region, machine_id, slot) DO UPDATE
	   SET seq = EXCLUDED.seq, lease_epoch = EXCLUDED.lease_epoch, claim_nonce = EXCLUDED.claim_nonce, holder = EXCLUDED.holder,
	       claimed_ms = EXCLUDED.claimed_ms, prev_mark_ms = EXCLUDED.prev_mark_ms, start_ms = EXCLUDED.start_ms,
	       end_kind = '', end_ms = 0, ended_ms = 0, claimed_at = now()
)
SELECT c.lease_epoch, c.lease_expiry, c.floor_ms, ident.sysid, ident.tl, o.system_identifier, o.timeline, EXISTS (SELECT 1 FROM same),
       pg_catalog.current_setting('transaction_isolation')
  FROM ident LEFT JOIN {o} o ON o.id = 1 LEFT JOIN c ON true`),
		// $3 holder, $4 epoch, $5 new mark, $6 the lease's schedule, $7
		// its claim nonce, $8 the lowest mark it may find (the one the
		// store last saw under this claim, 0 if none: a lower one means
		// the table went back; signs.go), $9 the renewal value to write,
		// $10 those the row may hold (lease.Renewals.Accepted). One row:
		// the mark after it, never lowered (NULL if nothing changed), and
		// whether the server is still the one the origin row records. It
		// writes the renewal value even when the mark is already past $5,
		// so that every renewal changes it; but never on a mark below $8.
		extend: q(`WITH ident AS MATERIALIZED ({ident}),
same AS MATERIALIZED (` + same("0::bigint", "0::bigint") + `),
u AS (
	UPDATE {t} SET lease_expiry = GREATEST(lease_expiry, $5::bigint), renewal = $9, updated_at = now()
	 WHERE region = $1 AND machine_id = $2 AND holder = $3 AND lease_epoch = $4 AND lease_expiry >= $8::bigint
	   AND ` + claim("$7") + ` AND ` + renewal("$10") + ` AND EXISTS (SELECT 1 FROM same) AND ` + sched("$6") + `
	RETURNING lease_expiry
)
SELECT u.lease_expiry, EXISTS (SELECT 1 FROM same), ident.sysid, ident.tl, o.system_identifier, o.timeline
  FROM ident LEFT JOIN {o} o ON o.id = 1 LEFT JOIN u ON true`),
		// $3 holder, $4 epoch, $5 mark, $6 the lease's claim nonce, $7 the
		// renewal values the row may hold. The same statement ends the
		// claim's journal entry with the mark written.
		release: q(`WITH rel AS (
	UPDATE {t} SET holder = '', lease_expiry = GREATEST($5::bigint, floor_ms), updated_at = now()
	 WHERE region = $1 AND machine_id = $2 AND holder = $3 AND lease_epoch = $4 AND ` + claim("$6") + ` AND ` + renewal("$7") + `
	RETURNING lease_expiry, claim_seq, claim_nonce
), ended AS (
	UPDATE {j} e SET end_kind = '` + lease.EndReleased + `', end_ms = rel.lease_expiry, ended_ms = {nowms}
	  FROM rel
	 WHERE e.region = $1 AND e.machine_id = $2 AND e.slot = rel.claim_seq % {keep} AND e.seq = rel.claim_seq
	   AND e.claim_nonce = rel.claim_nonce AND e.end_kind = ''
)
SELECT lease_expiry FROM rel`),
		get: q(`SELECT machine_id, holder, lease_expiry, lease_epoch, floor_ms, claim_nonce, renewal FROM {t}
 WHERE region = $1 AND machine_id = $2`),
		list: q(`SELECT machine_id, holder, lease_expiry, lease_epoch, floor_ms, claim_nonce, renewal FROM {t}
 WHERE region = $1 ORDER BY machine_id`),
		// $2, $3 the range.
		scan: q(`SELECT machine_id, holder, lease_expiry, lease_epoch, floor_ms, claim_nonce, renewal FROM {t}
 WHERE region = $1 AND machine_id BETWEEN $2 AND $3`),
		// quarantine ends the journal entry of the claim the row carries
		// (its claim_nonce, kept) if no write ended it yet and the
		// quarantine's epoch follows the claim's: the holder's, whether it
		// still held or its lease had run out. Its end is the mark kept.
		quarantine: q(`WITH q AS (
	INSERT INTO {t} AS r (region, machine_id, holder, lease_expiry, lease_epoch, floor_ms)
	VALUES ($1, $2, {quarantined}, {far}, 1, 0)
	ON CONFLICT (region, machine_id) DO UPDATE
	   SET holder = {quarantined}, lease_expiry = {far}, lease_epoch = r.lease_epoch + 1,
	       floor_ms = GREATEST(r.floor_ms, r.lease_expiry), updated_at = now()
	 WHERE r.holder <> {quarantined}
	RETURNING lease_epoch, floor_ms, claim_seq, claim_nonce
), ended AS (
	UPDATE {j} e SET end_kind = '` + lease.EndQuarantined + `', end_ms = q.floor_ms, ended_ms = {nowms}
	  FROM q
	 WHERE e.region = $1 AND e.machine_id = $2 AND e.slot = q.claim_seq % {keep} AND e.seq = q.claim_seq
	   AND e.claim_nonce = q.claim_nonce AND e.lease_epoch = q.lease_epoch - 1 AND e.end_kind = ''
)
SELECT lease_epoch, floor_ms FROM q`),
		// unquarantine ends, as quarantined at the mark kept, the journal
		// entry of a holder whose row was quarantined by hand (no write
		// ended it: the row's claim, one epoch back), so that a raise of
		// the free row's mark does not stretch it.
		unquarantine: q(`WITH u AS (
	UPDATE {t} SET holder = '', lease_expiry = floor_ms, updated_at = now()
	 WHERE region = $1 AND machine_id = $2 AND holder = {quarantined}
	RETURNING lease_epoch, lease_expiry, claim_seq, claim_nonce
), ended AS (
	UPDATE {j} e SET end_kind = '` + lease.EndQuarantined + `', end_ms = u.lease_expiry, ended_ms = {nowms}
	  FROM u
	 WHERE e.region = $1 AND e.machine_id = $2 AND e.slot = u.claim_seq % {keep} AND e.seq = u.claim_seq
	   AND e.claim_nonce = u.claim_nonce AND e.lease_epoch = u.lease_epoch - 1 AND e.end_kind = ''
)
SELECT lease_epoch, lease_expiry FROM u`),
		// raiseLock and raise are RaiseMarks, in one transaction. $2, $3
		// the range, $4 the mark. raiseLock creates the missing rows free
		// with the mark and locks every row of the range, in order of
		// number (ON CONFLICT DO UPDATE locks the rows it does not
		// update), so that raise reads in old exactly what it replaces;
		// it returns the rows created.
		raiseLock: q(`WITH ins AS (
	INSERT INTO {t} AS r (region, machine_id, holder, lease_expiry, lease_epoch, floor_ms)
	SELECT $1, n, '', $4::bigint, 0, $4::bigint FROM generate_series($2::integer, $3::integer) AS n
	ON CONFLICT (region, machine_id) DO UPDATE SET holder = r.holder WHERE false
	RETURNING 1
)
SELECT count(*) FROM ins`),
		// Every row gets floor_ms ≥ the mark, so no release goes
		// below it; every held row (not quarantined) loses its holder and
		// gets epoch + 1, so a claim that survived in a restored store
		// fails at its next extension and its holder claims again above
		// the mark. The count is of rows whose effective mark was lower or
		// whose holder was fenced. The fenced holder's journal entry ends
		// at the mark replaced (ended); the entry of a holder quarantined
		// by hand (the row's claim, one epoch back, no end written) ends
		// as quarantined at the mark kept.
		raise: q(`WITH old AS (
	SELECT machine_id, CASE WHEN holder = {quarantined} THEN floor_ms ELSE lease_expiry END AS mark,
	       holder <> '' AND holder <> {quarantined} AS held, holder = {quarantined} AS quar,
	       lease_epoch, claim_nonce, claim_seq
	  FROM {t} WHERE region = $1 AND machine_id BETWEEN $2 AND $3
), up AS (
	INSERT INTO {t} AS r (region, machine_id, holder, lease_expiry, lease_epoch, floor_ms)
	SELECT $1, n, '', $4::bigint, 0, $4::bigint FROM generate_series($2::integer, $3::integer) AS n
	ON CONFLICT (region, machine_id) DO UPDATE
	   SET lease_expiry = CASE WHEN r.holder = {quarantined} THEN r.lease_expiry ELSE GREATEST(r.lease_expiry, $4::bigint) END,
	       floor_ms = GREATEST(r.floor_ms, $4::bigint),
	       holder = CASE WHEN r.holder = {quarantined} THEN r.holder ELSE '' END,
	       lease_epoch = CASE WHEN r.holder <> '' AND r.holder <> {quarantined} THEN r.lease_epoch + 1 ELSE r.lease_epoch END,
	       claim_nonce = CASE WHEN r.holder <> '' AND r.holder <> {quarantined} THEN '` + fencedByRaise + `' ELSE r.claim_nonce END,
	       updated_at = now()
	 WHERE r.floor_ms < $4::bigint OR (r.holder <> {quarantined} AND r.lease_expiry < $4::bigint)
	    OR (r.holder <> '' AND r.holder <> {quarantined})
	RETURNING machine_id
), ended AS (
	UPDATE {j} e SET end_kind = CASE WHEN old.quar THEN '` + lease.EndQuarantined + `' ELSE '` + lease.EndRaised + `' END,
	       end_ms = old.mark, ended_ms = {nowms}
	  FROM old JOIN up USING (machine_id)
	 WHERE e.region = $1 AND e.machine_id = old.machine_id AND e.slot = old.claim_seq % {keep} AND e.seq = old.claim_seq
	   AND e.claim_nonce = old.claim_nonce AND e.end_kind = ''
	   AND (old.held OR (old.quar AND e.lease_epoch = old.lease_epoch - 1))
)
SELECT count(*) FROM up LEFT JOIN old USING (machine_id) WHERE old.machine_id IS NULL OR old.mark < $4::bigint OR old.held`),
		// The journal of number $2, oldest claim first.
		history: q(`SELECT machine_id, lease_epoch, claim_nonce, holder, claimed_ms, prev_mark_ms, start_ms, end_kind, end_ms, ended_ms
  FROM {j} WHERE region = $1 AND machine_id = $2 ORDER BY seq`),
		// giveBack empties the interval of the entry of claim nonce $3, a
		// claim that committed but that its claimer could not adopt (see
		// Store.adopt): it ends, released at its own start.
		giveBack: q(`UPDATE {j} SET end_kind = '` + lease.EndReleased + `', end_ms = start_ms, ended_ms = {nowms}
 WHERE region = $1 AND machine_id = $2 AND claim_nonce = $3
RETURNING seq`),
		fleet:     q(`SELECT schedule, version FROM {f} WHERE id = 1`),
		fleetInit: q(`INSERT INTO {f} (id, schedule, version) VALUES (1, $1, 1) ON CONFLICT (id) DO NOTHING RETURNING version`),
		fleetSet:  q(`UPDATE {f} SET schedule = $1, version = version + 1, updated_at = now() WHERE id = 1 AND version = $2 RETURNING version`),
		// unusedLock keeps every claim, extension and mark write out of the
		// lease table and its journal until the transaction ends (SHARE ROW
		// EXCLUSIVE conflicts with the ROW EXCLUSIVE lock each of those
		// statements takes before its snapshot), so that unused, a later
		// statement of the same transaction, counts every row a committed
		// claim wrote, and a claim waiting on it sees the schedule written.
		unusedLock: q(`LOCK TABLE {t}, {j} IN SHARE ROW EXCLUSIVE MODE`),
		unused:     q(`SELECT (SELECT count(*) FROM {t}), (SELECT count(*) FROM {j})`),
		// The registry's copy. $1 the version written, $2 the body
		// (registry.Encode): the row is inserted for version 1 and
		// updated from version $1 - 1 otherwise; no row returned means the
		// version stored was another.
		registry: q(`SELECT version, body::text FROM {r} WHERE id = 1`),
		// Where the registry's copy is: the server's system identifier
		// (from {ident}, as the restore checks read it), the database and
		// the registry table's schema and name as the server resolves them.
		registryIdentity: q(`SELECT ident.sysid, current_database(), n.nspname, c.relname
	  FROM ({ident}) AS ident, pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	 WHERE c.oid = '{r}'::regclass`),
		registryInit: q(`INSERT INTO {r} (id, version, body) VALUES (1, $1, ($2::text)::jsonb) ON CONFLICT (id) DO NOTHING RETURNING version`),
		registrySet:  q(`UPDATE {r} SET version = $1, body = ($2::text)::jsonb, updated_at = now() WHERE id = 1 AND version = $1::bigint - 1 RETURNING version`),
		// why explains a claim or extension that changed nothing: the
		// stored schedule ('v1' at version 0 when never set).
		why: q(`SELECT COALESCE((SELECT schedule FROM {f} WHERE id = 1), 'v1'), COALESCE((SELECT version FROM {f} WHERE id = 1), 0)`),
		// origin records the server's identity. $1 the claimer's now plus
		// the restore window, $2 and $3 the identity the row had (NULL if
		// it had none), $4 what changed, $5 the claimer's now. A first look inserts the row; a
		// change counts a restore, raises the origin's floor (a floor of
		// every later claim) and fences every held row of every region,
		// all in one statement, and only if the row still has the
		// identity read (a compare-and-set: one claimer records each
		// restore). It returns the restores counted after it (NULL if the
		// row had moved meanwhile) and the number of holders fenced.
		origin: q(`WITH ident AS MATERIALIZED ({ident}),
up AS (
	INSERT INTO {o} AS o (id, system_identifier, timeline) SELECT 1, sysid, tl FROM ident
	ON CONFLICT (id) DO UPDATE
	   SET system_identifier = EXCLUDED.system_identifier, timeline = EXCLUDED.timeline,
	       restores = o.restores + 1, floor_ms = GREATEST(o.floor_ms, $1::bigint), noticed_ms = $5::bigint,
	       detail = $4, noticed_at = now()
	 WHERE o.system_identifier = $2 AND o.timeline = $3
	RETURNING restores
), fence AS (
	UPDATE {t} SET holder = '', lease_epoch = lease_epoch + 1, floor_ms = GREATEST(floor_ms, lease_expiry),
	       claim_nonce = '` + fencedByRestore + `', updated_at = now()
	 WHERE holder <> '' AND holder <> {quarantined} AND EXISTS (SELECT 1 FROM up WHERE restores > 0)
	RETURNING 1
)
SELECT (SELECT restores FROM up), (SELECT count(*) FROM fence)`),
	}
}
