package dynamostore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/lease"
)

// TestTestBound: the store's notice window is the table timings' unless
// a test fleet's Config.TestBound sets it (lease.NoticeWindow of it, for its Keyspace
// views too), and a keeper whose self-fence is longer than the store's
// bound is refused at start.
func TestTestBound(t *testing.T) {
	def := newStore(t)
	if got := def.MaxNoticeWindow(); got != dynamostore.MaxNoticeWindow || got < lease.NoticeWindow(dynamostore.Timings().SelfFence) {
		t.Errorf("default MaxNoticeWindow %v, want the constant %v, at least the table timings' notice window", got, dynamostore.MaxNoticeWindow)
	}
	s := connectAt(t, shimEndpoint(t), def.Table(), dynamostore.Config{TestBound: testbound.Of(5 * time.Second)})
	if got, want := s.MaxNoticeWindow(), lease.NoticeWindow(5*time.Second); got != want {
		t.Errorf("MaxNoticeWindow %v with TestBound 5s, want %v", got, want)
	}
	ks, err := s.Keyspace(1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ks.MaxNoticeWindow(), lease.NoticeWindow(5*time.Second); got != want {
		t.Errorf("Keyspace(1).MaxNoticeWindow %v, want %v", got, want)
	}
	_, err = lease.StartKeeper(t.Context(), lease.KeeperConfig{Store: s, LeaseFor: 10 * time.Second, RenewEvery: time.Second, SelfFence: 6 * time.Second})
	if !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("a keeper with a 6 s self-fence on a store with TestBound 5 s: %v, want ErrInvalid", err)
	}
	if _, err := dynamostore.New(s.Client(), dynamostore.Config{Table: def.Table(), TestBound: testbound.Of(-time.Second)}); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("a negative TestBound: %v, want ErrInvalid", err)
	}
}
