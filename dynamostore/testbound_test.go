package dynamostore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/lease/leasetest"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
)

// TestTestBound: the store's notice window is the table timings' unless
// a test fleet's Config.TestBound sets it (lease.NoticeWindow of it, for its Keyspace
// views too), and a keeper whose self-fence is longer than the store's
// bound is refused at start.
func TestTestBound(t *testing.T) {
	def := newStore(t)
	s := connectAt(t, shimEndpoint(t), def.Table(), dynamostore.Config{TestBound: testbound.Of(5 * time.Second)})
	leasetest.CheckTestBound(t, def, s, dynamostore.MaxNoticeWindow, 5*time.Second)
	if _, err := dynamostore.New(s.Client(), dynamostore.Config{Table: def.Table(), TestBound: testbound.Of(-time.Second)}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("a negative TestBound: %v, want ErrInvalid", err)
	}
}
