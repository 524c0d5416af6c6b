package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// TestAttackIsolationRoutes: other ways a pooled session comes to claim
// outside READ COMMITTED — SET SESSION CHARACTERISTICS in a hook, the
// URL's options, the simple protocol, a generic plan cached at READ
// COMMITTED and reused after a SET, READ UNCOMMITTED (run as READ
// COMMITTED by PostgreSQL but named otherwise). Each claim must be
// refused with ErrInvalid naming READ COMMITTED and leave nothing behind:
// no lease row, no journal entry, the origin row unchanged, so that a
// fleet-schedule change at once still finds the table unused.
func TestAttackIsolationRoutes(t *testing.T) {
	type route struct {
		name, url string // url: query parameters added to the test URL
		hook      string // run by AfterConnect
		setAfter  string // run on the one session after a first claim at READ COMMITTED
		want      string // the level the refusal names
	}
	for _, r := range []route{
		{name: "SET SESSION CHARACTERISTICS", hook: "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ", want: "REPEATABLE READ"},
		{name: "URL options", url: "options=-c%20default_transaction_isolation%3Dserializable", want: "SERIALIZABLE"},
		{name: "simple protocol", url: "default_query_exec_mode=simple_protocol&default_transaction_isolation=repeatable%20read", want: "REPEATABLE READ"},
		{name: "exec mode", url: "default_query_exec_mode=exec&default_transaction_isolation=repeatable%20read", want: "REPEATABLE READ"},
		{name: "generic plan cached, then SET", hook: "SET plan_cache_mode = force_generic_plan", setAfter: "SET default_transaction_isolation = 'repeatable read'", want: "REPEATABLE READ"},
		{name: "read uncommitted", url: "default_transaction_isolation=read%20uncommitted", want: "READ UNCOMMITTED"},
	} {
		t.Run(r.name, func(t *testing.T) {
			pool := testPool(t, 4)
			table := newTable(t, pool)
			admin := openStore(t, pool, table)

			url := testURL(t)
			sep := "?"
			if strings.Contains(url, "?") {
				sep = "&"
			}
			url += sep + "pool_max_conns=1"
			if r.url != "" {
				url += "&" + r.url
			}
			cfg, err := pgxpool.ParseConfig(url)
			if err != nil {
				t.Fatal(err)
			}
			if r.hook != "" {
				cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
					_, err := c.Exec(ctx, r.hook)
					return err
				}
			}
			own, err := pgxpool.NewWithConfig(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(own.Close)
			s, err := pgstore.New(own, pgstore.Config{Table: table})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			var origin string
			if err := pool.QueryRow(t.Context(), "SELECT row_to_json(o)::text FROM "+pgx.Identifier{table + "_origin"}.Sanitize()+" o").Scan(&origin); err != nil {
				t.Fatal(err)
			}

			now := time.Now().UnixMilli()
			if r.setAfter != "" {
				// Warm the statement cache at READ COMMITTED (five
				// executions make a custom-plan statement generic; the
				// hook forces it), releasing each number.
				for i := 0; i < 6; i++ {
					l, err := s.Claim(t.Context(), lease.ClaimRequest{Holder: "warm", Range: lease.Range{Lo: 30, Hi: 30}, NowMs: now, LeaseFor: time.Minute})
					if err != nil {
						t.Fatalf("warm claim %d: %v", i, err)
					}
					if err := s.Release(t.Context(), l, now); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := own.Exec(t.Context(), r.setAfter); err != nil {
					t.Fatal(err)
				}
			}
			_, err = s.Claim(t.Context(), lease.ClaimRequest{Holder: "h", Range: lease.Range{Lo: 5, Hi: 5}, NowMs: now, LeaseFor: time.Minute})
			if err == nil {
				t.Fatalf("claim at %s succeeded", r.want)
			}
			if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "READ COMMITTED") || !strings.Contains(err.Error(), r.want) {
				t.Errorf("claim at %s refused with %v; want ErrInvalid naming %s and READ COMMITTED", r.want, err, r.want)
			}
			var rows, entries int64
			if err := pool.QueryRow(t.Context(), "SELECT (SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()+" WHERE machine_id = 5), (SELECT count(*) FROM "+
				pgx.Identifier{table + "_claims"}.Sanitize()+" WHERE machine_id = 5)").Scan(&rows, &entries); err != nil {
				t.Fatal(err)
			}
			if rows != 0 || entries != 0 {
				t.Errorf("refused claim left %d rows and %d journal entries of machine 5", rows, entries)
			}
			var after string
			if err := pool.QueryRow(t.Context(), "SELECT row_to_json(o)::text FROM "+pgx.Identifier{table + "_origin"}.Sanitize()+" o").Scan(&after); err != nil {
				t.Fatal(err)
			}
			if after != origin {
				t.Errorf("refused claim changed the origin row: %s → %s", origin, after)
			}
			if r.setAfter == "" {
				if _, err := admin.SetFleetScheduleUnused(t.Context(), 0, "v2"); err != nil {
					t.Errorf("SetFleetScheduleUnused after a refused claim: %v", err)
				}
			}
			t.Logf("refused: %v — held", err)
		})
	}
}
