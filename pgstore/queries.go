package pgstore

import "strings"

// queries are the store's statements for one table. $1 is always the
// region and $2 (except in RaiseMarks) the machine number.
type queries struct {
	create, claim, extend, release, get, list, scan, quarantine, unquarantine, raise string
}

func newQueries(table string) queries {
	q := func(s string) string { return strings.ReplaceAll(s, "{t}", table) }
	return queries{
		create: q(`CREATE TABLE IF NOT EXISTS {t} (
	region       integer     NOT NULL CHECK (region >= 0),
	machine_id   integer     NOT NULL CHECK (machine_id >= 0),
	holder       text        NOT NULL DEFAULT '',
	lease_expiry bigint      NOT NULL DEFAULT 0,
	lease_epoch  bigint      NOT NULL DEFAULT 0,
	floor_ms     bigint      NOT NULL DEFAULT 0,
	updated_at   timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (region, machine_id)
)`),
		// $3 holder, $4 claimer's now, $5 lease length (ms), $6 MaxAhead (ms).
		claim: q(`INSERT INTO {t} AS r (region, machine_id, holder, lease_expiry, lease_epoch, floor_ms)
VALUES ($1, $2, $3, $4::bigint + $5::bigint, 1, 0)
ON CONFLICT (region, machine_id) DO UPDATE
   SET holder = EXCLUDED.holder,
       lease_expiry = GREATEST(r.lease_expiry, EXCLUDED.lease_expiry),
       lease_epoch = r.lease_epoch + 1,
       floor_ms = GREATEST(r.floor_ms, r.lease_expiry),
       updated_at = now()
 WHERE r.holder <> 'QUARANTINED'
   AND (r.lease_expiry < $4::bigint OR (r.holder = '' AND r.lease_expiry - $4::bigint <= $6::bigint))
RETURNING lease_epoch, lease_expiry, floor_ms`),
		// $3 holder, $4 epoch, $5 new mark.
		extend: q(`UPDATE {t} SET lease_expiry = $5, updated_at = now()
 WHERE region = $1 AND machine_id = $2 AND holder = $3 AND lease_epoch = $4 AND lease_expiry < $5
RETURNING lease_expiry`),
		// $3 holder, $4 epoch, $5 mark.
		release: q(`UPDATE {t} SET holder = '', lease_expiry = GREATEST($5::bigint, floor_ms), updated_at = now()
 WHERE region = $1 AND machine_id = $2 AND holder = $3 AND lease_epoch = $4
RETURNING lease_expiry`),
		get: q(`SELECT machine_id, holder, lease_expiry, lease_epoch, floor_ms FROM {t}
 WHERE region = $1 AND machine_id = $2`),
		list: q(`SELECT machine_id, holder, lease_expiry, lease_epoch, floor_ms FROM {t}
 WHERE region = $1 ORDER BY machine_id`),
		// $2, $3 the range.
		scan: q(`SELECT machine_id, holder, lease_expiry, lease_epoch, floor_ms FROM {t}
 WHERE region = $1 AND machine_id BETWEEN $2 AND $3`),
		quarantine: q(`INSERT INTO {t} AS r (region, machine_id, holder, lease_expiry, lease_epoch, floor_ms)
VALUES ($1, $2, 'QUARANTINED', 4102444800000, 1, 0)
ON CONFLICT (region, machine_id) DO UPDATE
   SET holder = 'QUARANTINED', lease_expiry = 4102444800000, lease_epoch = r.lease_epoch + 1,
       floor_ms = GREATEST(r.floor_ms, r.lease_expiry), updated_at = now()
 WHERE r.holder <> 'QUARANTINED'
RETURNING lease_epoch, floor_ms`),
		unquarantine: q(`UPDATE {t} SET holder = '', lease_expiry = floor_ms, updated_at = now()
 WHERE region = $1 AND machine_id = $2 AND holder = 'QUARANTINED'
RETURNING lease_epoch, lease_expiry`),
		// $2, $3 the range, $4 the mark. Missing rows are created free with
		// the mark; every row gets floor_ms ≥ the mark, so no release goes
		// below it; the count is of rows whose effective mark was lower.
		raise: q(`WITH old AS (
	SELECT machine_id, CASE WHEN holder = 'QUARANTINED' THEN floor_ms ELSE lease_expiry END AS mark
	  FROM {t} WHERE region = $1 AND machine_id BETWEEN $2 AND $3
), up AS (
	INSERT INTO {t} AS r (region, machine_id, holder, lease_expiry, lease_epoch, floor_ms)
	SELECT $1, n, '', $4::bigint, 0, $4::bigint FROM generate_series($2::integer, $3::integer) AS n
	ON CONFLICT (region, machine_id) DO UPDATE
	   SET lease_expiry = CASE WHEN r.holder = 'QUARANTINED' THEN r.lease_expiry ELSE GREATEST(r.lease_expiry, $4::bigint) END,
	       floor_ms = GREATEST(r.floor_ms, $4::bigint), updated_at = now()
	 WHERE r.floor_ms < $4::bigint OR (r.holder <> 'QUARANTINED' AND r.lease_expiry < $4::bigint)
	RETURNING machine_id
)
SELECT count(*) FROM up LEFT JOIN old USING (machine_id) WHERE old.machine_id IS NULL OR old.mark < $4::bigint`),
	}
}
