package dynamostore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// backup is every item of the table, as a point-in-time restore brings
// them back.
func backup(t *testing.T, s *dynamostore.Store) []map[string]types.AttributeValue {
	t.Helper()
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(s.Client(), &dynamodb.ScanInput{TableName: aws.String(s.Table()), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctxFor(t))
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, out.Items...)
	}
	return items
}

// restoreTable does what a point-in-time restore into the table's own
// name does (delete the table, restore the backup under its name): a new
// table, with a new TableId, holding the items of the backup.
func restoreTable(t *testing.T, s *dynamostore.Store, items []map[string]types.AttributeValue) {
	t.Helper()
	c := s.Client()
	if _, err := c.DeleteTable(ctxFor(t), &dynamodb.DeleteTableInput{TableName: aws.String(s.Table())}); err != nil {
		t.Fatal(err)
	}
	w := dynamodb.NewTableNotExistsWaiter(c, func(o *dynamodb.TableNotExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 20*time.Millisecond, time.Second
	})
	if err := w.Wait(ctxFor(t), &dynamodb.DescribeTableInput{TableName: aws.String(s.Table())}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTable(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if _, err := c.PutItem(ctxFor(t), &dynamodb.PutItemInput{TableName: aws.String(s.Table()), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestoreNoticed: A claims 5 and B claims 6 after a backup; the table
// is restored from it (a new TableId; 5 still names A with its epoch, 6 is
// free). A's store notices at A's next extension (ErrRestored, although
// the restored item would have let it extend), and every claim after —
// through that store, or through a store started afterwards — starts at
// least the restore window after the moment it was noticed, above anything
// B may still issue on 6.
func TestRestoreNoticed(t *testing.T) {
	table := tableFor(t)
	cfg := dynamostore.Config{IdentityEvery: time.Nanosecond}
	s := connectAt(t, shimEndpoint(t), table, cfg)
	if err := s.CreateTable(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	now := baseMs()
	a := mustExtend(t, s, leasetest.MustClaim(t, s, req("a", 5, 5, now)), now+20_000)
	saved := backup(t, s)
	other := connectAt(t, shimEndpoint(t), table, cfg)
	b := mustExtend(t, other, leasetest.MustClaim(t, other, req("b", 6, 6, now)), now+30_000)
	restoreTable(t, s, saved)

	if _, err := s.Extend(ctxFor(t), a, now+25_000, 0); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("A's extension after the restore: %v, want ErrRestored", err)
	}
	const window = time.Minute
	r := req("a2", 6, 6, now+1000)
	r.RestoreWindow = window
	l := leasetest.MustClaim(t, s, r)
	if l.StartMs < now+1000+window.Milliseconds() || l.StartMs <= b.MarkMs {
		t.Fatalf("claim after the restore %+v: starts below NowMs + window = %d (B reserved up to %d)", l, now+1000+window.Milliseconds(), b.MarkMs)
	}
	// A process started after the restore was noticed starts there too,
	// whatever its own window.
	fresh := connectAt(t, shimEndpoint(t), table, cfg)
	if l2 := leasetest.MustClaim(t, fresh, req("c", 7, 7, now+2000)); l2.StartMs < l.StartMs {
		t.Fatalf("fresh store's claim %+v starts below the recorded floor %d", l2, l.StartMs)
	}
	// B's store had not looked since the restore: its next extension
	// compares the TableId and notices.
	if _, err := other.Extend(ctxFor(t), b, now+40_000, 0); !errors.Is(err, lease.ErrRestored) {
		t.Fatalf("B's extension after the restore: %v, want ErrRestored", err)
	}
}

// TestRestoreNoticedByFreshStore: the table is restored while no store is
// running; a store started afterwards has never seen the old TableId but
// finds it in the table's identity item, so it too treats the table as
// restored.
func TestRestoreNoticedByFreshStore(t *testing.T) {
	table := tableFor(t)
	s := connectAt(t, shimEndpoint(t), table, dynamostore.Config{})
	if err := s.CreateTable(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	now := baseMs()
	leasetest.MustClaim(t, s, req("a", 5, 5, now))
	restoreTable(t, s, backup(t, s))
	fresh := connectAt(t, shimEndpoint(t), table, dynamostore.Config{})
	r := req("b", 6, 6, now)
	r.RestoreWindow = time.Minute
	if l := leasetest.MustClaim(t, fresh, r); l.StartMs < now+time.Minute.Milliseconds() {
		t.Fatalf("fresh store's first claim on the restored table %+v: starts below NowMs + window", l)
	}
	// Without a restore, a second fresh store sees the identity it
	// expects; the recorded floor still holds.
	again := connectAt(t, shimEndpoint(t), table, dynamostore.Config{})
	if l := leasetest.MustClaim(t, again, req("c", 7, 7, now)); l.StartMs < now+time.Minute.Milliseconds() {
		t.Fatalf("claim %+v below the floor recorded after the restore", l)
	}
}

// TestNoRestoreNoFloor: without a restore, the identity check changes
// nothing: a claim starts at NowMs and the lease extends.
func TestNoRestoreNoFloor(t *testing.T) {
	s := connectAt(t, shimEndpoint(t), tableFor(t), dynamostore.Config{IdentityEvery: time.Nanosecond})
	if err := s.CreateTable(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	now := baseMs()
	for n := range 3 {
		r := req("a", n, n, now)
		r.RestoreWindow = time.Hour
		l := leasetest.MustClaim(t, s, r)
		if l.StartMs != now {
			t.Fatalf("claim %+v, want start %d", l, now)
		}
		mustExtend(t, s, l, now+20_000)
	}
}
