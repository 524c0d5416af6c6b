package dynamostore_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// journalItems returns number n's items in the journal table (region 0),
// oldest first.
func journalItems(t *testing.T, s *dynamostore.Store, n int) []map[string]types.AttributeValue {
	t.Helper()
	out, err := s.Client().Query(ctxFor(t), &dynamodb.QueryInput{
		TableName:                 aws.String(s.JournalTable()),
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "0/" + strconv.Itoa(n)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

func attrS(m map[string]types.AttributeValue, name string) string {
	if v, ok := m[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// TestJournalArchiveRace: two claimers read the same entry in different
// states — one while its holder held the number, one after the holder
// released it at its full mark (a release keeps the epoch, and here the
// mark) — and archive it in either order. The archived copy ends up with
// the end, never without it; the claimer that read the entry before the
// release does not take the number (its condition pins jcur's end), and
// the one that read it after does.
func TestJournalArchiveRace(t *testing.T) {
	for _, order := range []string{"ended first", "unended first"} {
		t.Run(order, func(t *testing.T) {
			s := newStore(t)
			ctx := ctxFor(t)
			now := baseMs()
			const m = 3
			a := mustExtend(t, s, leasetest.MustClaim(t, s, req("a", m, m, now)), now+2_000)
			before, err := dynamostore.ReadSeen(ctx, s, m)
			if err != nil {
				t.Fatal(err)
			}
			leasetest.MustRelease(t, s, a, a.MarkMs)
			after, err := dynamostore.ReadSeen(ctx, s, m)
			if err != nil {
				t.Fatal(err)
			}
			first, second := after, before
			if order == "unended first" {
				first, second = before, after
			}
			for i, seen := range []dynamostore.Seen{first, second} {
				if err := dynamostore.ArchiveSeen(ctx, s, seen); err != nil {
					t.Fatalf("archive %d: %v", i, err)
				}
			}
			items := journalItems(t, s, m)
			if len(items) != 1 || attrS(items[0], "e") != lease.EndReleased {
				t.Fatalf("journal table after both archives: %v, want one entry, released", items)
			}
			late := req("b", m, m, a.MarkMs+1)
			if l, err := dynamostore.ClaimSeen(ctx, s, late, before); l != nil || err != nil {
				t.Fatalf("claim from the entry read before the release = %+v, %v; want its condition to fail", l, err)
			}
			b, err := dynamostore.ClaimSeen(ctx, s, late, after)
			if err != nil || b == nil {
				t.Fatalf("claim from the entry read after the release = %+v, %v", b, err)
			}
			h := leasetest.MustHistory(t, s, m)
			if len(h) != 2 || h[0].Token != a.Token || h[0].End != lease.EndReleased || h[0].EndMs != a.MarkMs || h[1].Token != b.Token {
				t.Fatalf("History = %+v", h)
			}
			leasetest.MustIntervals(t, s, m)
		})
	}
}

// TestJournalArchiveFails: a claim whose archive write cannot be made does
// not overwrite jcur — a journal table holding another claim's entry under
// that number (the number is passed over), a journal table deleted after
// the store checked it (the claim fails) — and a store on a deployment
// without a journal table fails its first claim, and History, with
// NoJournalTableError, even for a number with nothing to archive.
func TestJournalArchiveFails(t *testing.T) {
	ctx := ctxFor(t)
	now := baseMs()
	const m = 5
	t.Run("foreign entry", func(t *testing.T) {
		s := newStore(t)
		a := leasetest.MustClaim(t, s, req("a", m, m, now))
		leasetest.MustRelease(t, s, a, a.StartMs+10)
		foreign := map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "0/" + strconv.Itoa(m)}, "n": &types.AttributeValueMemberN{Value: "1"},
			"t": &types.AttributeValueMemberN{Value: "99"}, "c": &types.AttributeValueMemberS{Value: "by-hand"},
			"h": &types.AttributeValueMemberS{Value: "x"}, "cm": &types.AttributeValueMemberN{Value: "1"},
			"pm": &types.AttributeValueMemberN{Value: "0"}, "sm": &types.AttributeValueMemberN{Value: "1"},
		}
		if _, err := s.Client().PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.JournalTable()), Item: foreign}); err != nil {
			t.Fatal(err)
		}
		before, _ := dynamostore.ReadSeen(ctx, s, m)
		if err := dynamostore.ArchiveSeen(ctx, s, before); !errors.Is(err, dynamostore.ErrUnarchivable) {
			t.Fatalf("archive over another claim's entry: %v, want ErrUnarchivable", err)
		}
		_, err := s.Claim(ctx, req("b", m, m, now+1_000))
		if !errors.Is(err, lease.ErrNoFreeNumber) || !strings.Contains(err.Error(), "journal") {
			t.Fatalf("claim of a number whose entry cannot be archived: %v, want ErrNoFreeNumber naming the journal", err)
		}
		if rec := leasetest.MustGet(t, s, m); rec.Token != a.Token || rec.Held() {
			t.Fatalf("record after the refused claim %+v, want epoch %d, free", rec, a.Token)
		}
		if _, err := s.Client().DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.JournalTable()),
			Key: map[string]types.AttributeValue{"pk": foreign["pk"], "n": foreign["n"]}}); err != nil {
			t.Fatal(err)
		}
		b := leasetest.MustClaim(t, s, req("b", m, m, now+1_000))
		if h := leasetest.MustHistory(t, s, m); len(h) != 2 || h[0].Token != a.Token || h[0].End != lease.EndReleased || h[1].Token != b.Token {
			t.Fatalf("History after the hand-made entry was deleted = %+v", h)
		}
	})
	t.Run("journal table deleted", func(t *testing.T) {
		s := newStore(t)
		a := leasetest.MustClaim(t, s, req("a", m, m, now))
		leasetest.MustRelease(t, s, a, a.StartMs+10)
		if _, err := s.Client().DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(s.JournalTable())}); err != nil {
			t.Fatal(err)
		}
		w := dynamodb.NewTableNotExistsWaiter(s.Client(), func(o *dynamodb.TableNotExistsWaiterOptions) {
			o.MinDelay, o.MaxDelay = 20*time.Millisecond, time.Second
		})
		if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.JournalTable())}, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		_, err := s.Claim(ctx, req("b", m, m, now+1_000))
		if !errors.Is(err, dynamostore.ErrNoJournalTable) {
			t.Fatalf("claim with the journal table gone: %v, want ErrNoJournalTable", err)
		}
		if rec := leasetest.MustGet(t, s, m); rec.Token != a.Token || rec.Held() {
			t.Fatalf("record after the failed archive %+v, want epoch %d, free", rec, a.Token)
		}
		if _, err := s.History(ctx, m); !errors.Is(err, dynamostore.ErrNoJournalTable) {
			t.Fatalf("History with the journal table gone: %v, want ErrNoJournalTable", err)
		}
		if err := s.CreateTable(ctx); err != nil { // leases init again
			t.Fatal(err)
		}
		leasetest.MustClaim(t, s, req("b", m, m, now+1_000))
	})
	t.Run("no journal table at start", func(t *testing.T) {
		s := newStore(t)
		old := connectAt(t, shimEndpoint(t), s.Table(), dynamostore.Config{JournalTable: s.Table() + "-never-created"})
		_, err := old.Claim(ctx, req("a", m, m, now))
		var nj *dynamostore.NoJournalTableError
		if !errors.As(err, &nj) || !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "snowfence leases init") {
			t.Fatalf("claim on a deployment without a journal table: %v; want NoJournalTableError (ErrInvalid) naming `snowfence leases init`", err)
		}
		if rec := leasetest.MustGet(t, s, m); rec.Token != 0 {
			t.Fatalf("record after the refused claim %+v, want none", rec)
		}
		if _, err := old.History(ctx, m); !errors.Is(err, dynamostore.ErrNoJournalTable) {
			t.Fatalf("History without a journal table: %v, want ErrNoJournalTable", err)
		}
	})
}

// TestJournalRestoreLeaseTableOnly: the lease table is restored to a
// backup and the journal table is not, so the journal table holds claims
// the restored table no longer knows — on a number claimed before the
// backup (its jcur goes back) and on one first claimed after it (its item
// is gone). The claims after the restore take sequence numbers above
// every archived entry, so History lists the lost claims in their place,
// between the restored entry and the new ones, each once, with disjoint
// intervals, and Who names the new holder for its timestamps.
func TestJournalRestoreLeaseTableOnly(t *testing.T) {
	s := newStore(t)
	ctx := ctxFor(t)
	now := baseMs()
	const m, fresh = 6, 7
	at := now
	cycle := func(holder string, n int) *lease.Lease {
		t.Helper()
		at += 1_000
		l := leasetest.MustClaim(t, s, req(holder, n, n, at))
		leasetest.MustRelease(t, s, mustExtend(t, s, l, at+500), at+500)
		at += 500
		return l
	}
	for _, h := range []string{"old-1", "old-2", "old-3"} {
		cycle(h, m)
	}
	snap := backup(t, s)
	for _, h := range []string{"lost-4", "lost-5", "lost-6"} {
		cycle(h, m)
	}
	cycle("lost-fresh-1", fresh)
	cycle("lost-fresh-2", fresh)
	restoreTable(t, s, snap)

	after := connect(t, s.Table(), 0) // a process started after the restore
	var mine []*lease.Lease
	for i := range 2 {
		at += 1_000
		l := leasetest.MustClaim(t, after, req("new-"+strconv.Itoa(i), m, m, at))
		if err := after.Release(ctx, l, l.StartMs+100); err != nil {
			t.Fatal(err)
		}
		mine = append(mine, l)
	}
	l := leasetest.MustClaim(t, after, req("new-fresh", fresh, fresh, at))
	for n, want := range map[int][]string{
		m:     {"old-1", "old-2", "old-3", "lost-4", "lost-5", "new-0", "new-1"},
		fresh: {"lost-fresh-1", "new-fresh"},
	} {
		h := leasetest.MustHistory(t, after, n)
		var got []string
		for _, e := range h {
			got = append(got, e.Holder)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("machine %d: History holders %v, want %v (claim order; lost-6 and lost-fresh-2 were only ever the lost table's newest entry)", n, got, want)
		}
		ivs := leasetest.MustIntervals(t, after, n)
		if n == m {
			for _, l := range mine {
				if iv, err := lease.Who(ivs, l.StartMs); err != nil || iv.Claim != l.Claim {
					t.Errorf("Who(%d) = %+v, %v; want %s", l.StartMs, iv, err, l.Holder)
				}
			}
		}
	}
	if l.StartMs <= at-1_000 {
		t.Errorf("claim after the restore starts at %d: not above the restore floor", l.StartMs)
	}
}
