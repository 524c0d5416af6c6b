package etcdstore_test

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease/leasetest"
)

// BenchmarkClaimRelease claims one number of a ten-number range and
// releases it again, on a one-member embedded etcd: the cost of a claim
// (range read, etcd lease grant, claim transaction) and of a release.
func BenchmarkClaimRelease(b *testing.B) {
	cli := etcdtest.Start(b, 1).Client(b)
	s := newStore(b, cli, etcdstore.Config{Logger: slog.New(slog.DiscardHandler)})
	b.ReportAllocs()
	now := baseMs()
	i := 0
	for b.Loop() {
		l := leasetest.MustClaim(b, s, req(fmt.Sprintf("bench-%d", i), 0, 9, now))
		leasetest.MustRelease(b, s, l, now+int64(i)+1)
		i++
	}
}
