package dynamostore_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// TestEpochRepeatedAfterRestore: the sequence the randomized search found
// on PostgreSQL, here on DynamoDB. Two keepers share one holder string; K1
// holds machine 3. Machine 3's item is restored from an earlier copy (in
// the same table, so its TableId says nothing) and the operator runs
// RaiseMarks at once; K2, in a process started after the restore, then
// claims machine 3 and gets K1's epoch again. Holder and epoch alone would
// let K1 extend K2's claim; the claim's own nonce tells them apart (a
// store that never saw K1's claim: ErrLost), and K1's own store, which saw
// K1's epoch under K1's claim, takes the same epoch under another claim
// for what it is, a restore (ErrRestored).
func TestEpochRepeatedAfterRestore(t *testing.T) {
	s := newStore(t)
	pre := connect(t, s.Table(), 0) // the other holders before the restore
	const holder = "process-p0"
	now := baseMs()
	k0 := leasetest.MustClaim(t, pre, req(holder, 3, 3, now))
	leasetest.MustRelease(t, pre, k0, now+10)
	key := map[string]types.AttributeValue{"machine_id": &types.AttributeValueMemberN{Value: "3"}}
	ctx := ctxFor(t)
	saved, err := s.Client().GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table()), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil || len(saved.Item) == 0 {
		t.Fatalf("back up machine 3's item: %v, %v", saved, err)
	}
	leasetest.MustRelease(t, pre, leasetest.MustClaim(t, pre, req("other", 3, 3, now+15)), now+20)
	leasetest.MustRelease(t, pre, leasetest.MustClaim(t, pre, req("other", 3, 3, now+16)), now+20)
	k1 := mustExtend(t, s, leasetest.MustClaim(t, s, req(holder, 3, 3, now+20)), now+5000)

	if _, err := s.Client().PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Table()), Item: saved.Item}); err != nil {
		t.Fatal(err)
	}
	post := connect(t, s.Table(), 0) // the operator and K2, after the restore
	if _, err := post.RaiseMarks(ctx, lease.Range{Lo: 0, Hi: 7}, now+6000); err != nil {
		t.Fatal(err)
	}
	// The restored item counts up from its old epoch (RaiseMarks may add
	// one): claims and releases by others bring it to K1's epoch − 1.
	for i := 0; leasetest.MustGet(t, post, 3).Token+1 < k1.Token && i < 10; i++ {
		leasetest.MustRelease(t, post, leasetest.MustClaim(t, post, req("other", 3, 3, now+25)), now+6000)
	}
	k2 := leasetest.MustClaim(t, post, req(holder, 3, 3, now+30))
	if k2.Token != k1.Token {
		t.Fatalf("K2's epoch %d, K1's %d: the restore did not repeat the epoch, so this test shows nothing", k2.Token, k1.Token)
	}
	fresh := connect(t, s.Table(), 0)
	if _, err := fresh.Extend(ctx, k1, now+7000, 0); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("K1, holder %q epoch %d, extends on K2's claim with the same holder and epoch: %v; want ErrLost", holder, k1.Token, err)
	}
	if err := fresh.Release(ctx, k1, now+7000); !errors.Is(err, lease.ErrLost) {
		t.Errorf("K1 releases K2's claim: %v, want ErrLost", err)
	}
	if _, err := s.Extend(ctx, k1, now+7000, 0); !errors.Is(err, lease.ErrRestored) {
		t.Errorf("K1 through its own store, which saw its epoch under its own claim: %v, want ErrRestored", err)
	}
	mustExtend(t, post, k2, now+8000)
}
