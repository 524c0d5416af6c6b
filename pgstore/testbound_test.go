package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"
	"github.com/snowfence/snowfence/lease/leasetest"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// TestTestBound: the store's notice window is the table timings' unless
// a test fleet's Config.TestBound sets it (lease.NoticeWindow of it, for its Keyspace
// views too), and a keeper whose self-fence is longer than the store's
// bound is refused at start: every claim on the table would start
// issuing before such a holder, cut off, stops.
func TestTestBound(t *testing.T) {
	pool := testPool(t, 4)
	table := newTable(t, pool)
	def := openStore(t, pool, table)
	s, err := pgstore.New(pool, pgstore.Config{Table: table, TestBound: testbound.Of(5 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	leasetest.CheckTestBound(t, def, s, pgstore.MaxNoticeWindow, 5*time.Second)
	if _, err := pgstore.New(pool, pgstore.Config{Table: table, TestBound: testbound.Of(-time.Second)}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("a negative TestBound: %v, want ErrInvalid", err)
	}
}
