package snowfence_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

func pgConnect(t *testing.T) (*pgx.Conn, context.Context) {
	t.Helper()
	url := testenv.PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn, ctx
}

// In a PostgreSQL uuid column, the UUIDv8 forms of IDs from several
// generators (machines of a v1-then-v2 schedule, on fake clocks
// spread over a cutover and with runs inside one millisecond) ORDER BY
// exactly as the IDs do in a bigint column, and read back as the same IDs.
func TestUUIDv8OrderInPostgres(t *testing.T) {
	conn, ctx := pgConnect(t)
	cut := uuidStart.Add(2 * time.Second)
	sched := snowfence.MustSchedule(snowfence.Step{Layout: snowfence.V1()}, snowfence.Step{From: cut, Layout: snowfence.V2()})
	r := rand.New(rand.NewPCG(9562, 8))
	var ids []snowfence.ID
	for m := range 6 {
		clk := fakeclock.New(uuidStart.Add(time.Duration(r.IntN(500)) * time.Millisecond))
		clk.AutoAdvance(true)
		g, err := snowfence.New(snowfence.Config{Lease: snowfence.Static(100+m*37, 0), Clock: clk, Schedule: sched, ClockPolicy: snowfence.ClockOff})
		if err != nil {
			t.Fatal(err)
		}
		for range 400 {
			batch, err := g.NextN(ctx, 1+r.IntN(20))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, batch...)
			clk.Advance(time.Duration(r.IntN(15)) * time.Millisecond)
		}
		g.Close()
	}
	if _, err := conn.Exec(ctx, "CREATE TEMPORARY TABLE v8_order (id bigint PRIMARY KEY, u uuid NOT NULL UNIQUE)"); err != nil {
		t.Fatal(err)
	}
	rows := make([][]any, len(ids))
	for i, id := range ids {
		u, err := sched.ToUUID(id)
		if err != nil {
			t.Fatal(err)
		}
		rows[i] = []any{int64(id), u}
	}
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"v8_order"}, []string{"id", "u"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatalf("COPY %d rows: %v", len(rows), err)
	}
	order := func(query string) []snowfence.ID {
		t.Helper()
		rs, err := conn.Query(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		var out []snowfence.ID
		for rs.Next() {
			var id int64
			var u snowfence.UUID
			if err := rs.Scan(&id, &u); err != nil {
				t.Fatal(err)
			}
			back, err := sched.FromUUID(u)
			if err != nil || back != snowfence.ID(id) {
				t.Fatalf("row %d: uuid %s reads back as %d, %v", id, u, back, err)
			}
			out = append(out, snowfence.ID(id))
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	byBigint := order("SELECT id, u FROM v8_order ORDER BY id")
	byUUID := order("SELECT id, u FROM v8_order ORDER BY u")
	if len(byBigint) != len(ids) {
		t.Fatalf("%d rows, want %d", len(byBigint), len(ids))
	}
	for i := range byBigint {
		if byBigint[i] != byUUID[i] {
			t.Fatalf("row %d: ORDER BY id gives %d, ORDER BY u gives %d", i, byBigint[i], byUUID[i])
		}
	}
	// The sample holds IDs of both layouts and of many machines in one
	// millisecond, so the order was tested where it is subtle.
	var layouts, sameMs int
	seen := map[string]bool{}
	for i, id := range byBigint {
		d, _ := sched.Decode(id)
		if !seen[d.Layout] {
			seen[d.Layout] = true
			layouts++
		}
		if i > 0 && id.Time().Equal(byBigint[i-1].Time()) {
			if p, _ := sched.Decode(byBigint[i-1]); p.Machine != d.Machine {
				sameMs++
			}
		}
	}
	if layouts != 2 || sameMs == 0 {
		t.Fatalf("sample has %d layouts and %d same-millisecond machine changes; want 2 and some", layouts, sameMs)
	}
	// The binary column value scans and binds as UUID does.
	var u snowfence.UUID
	want, _ := sched.ToUUID(byBigint[0])
	if err := conn.QueryRow(ctx, "SELECT u FROM v8_order WHERE u = $1", want).Scan(&u); err != nil || u != want {
		t.Fatalf("lookup by UUID: %s, %v", u, err)
	}
}

// In PostgreSQL too, a UUIDv7 and a UUIDv8 of the same millisecond are
// neighbours under ORDER BY among other milliseconds' values.
func TestUUIDv7AndV8AdjacentInPostgres(t *testing.T) {
	conn, ctx := pgConnect(t)
	mix, pairs := sameMillisecondMix(t)
	if _, err := conn.Exec(ctx, "CREATE TEMPORARY TABLE v7v8 (u uuid PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	for _, u := range mix {
		if _, err := conn.Exec(ctx, "INSERT INTO v7v8 VALUES ($1)", u); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := conn.Query(ctx, "SELECT u FROM v7v8 ORDER BY u")
	if err != nil {
		t.Fatal(err)
	}
	sorted, err := pgx.CollectRows(rs, pgx.RowTo[snowfence.UUID])
	if err != nil {
		t.Fatal(err)
	}
	if len(sorted) != len(mix) {
		t.Fatalf("%d rows, want %d", len(sorted), len(mix))
	}
	checkAdjacent(t, sorted, pairs)
	if !slices.IsSortedFunc(sorted, func(a, b snowfence.UUID) int { return a.Compare(b) }) {
		t.Error("PostgreSQL's uuid order is not the byte order")
	}
}
