package pgstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// The store's timings fill the zero timings of a keeper's configuration;
// the ones it sets stay.
func ExampleTimings() {
	kc := lease.KeeperConfig{RenewEvery: 15 * time.Second}
	pgstore.Timings().Apply(&kc)
	fmt.Println("lease", kc.LeaseFor, "renew every", kc.RenewEvery, "self-fence", kc.SelfFence, "margin", kc.Margin)
	// Output: lease 5m0s renew every 15s self-fence 4m10s margin 5s
}

// A keeper leasing a machine number from a PostgreSQL table with the
// table's timings, and a generator minting on it. (It needs a server, so
// it is compiled but not run.)
func Example_keeper() {
	ctx := context.Background()
	store, err := pgstore.Connect(ctx, "postgres://snowfence@127.0.0.1:5432/snowfence", pgstore.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil { // "snowfence leases init" does the same
		log.Fatal(err)
	}
	kc := lease.KeeperConfig{Store: store, Range: &lease.Range{Lo: 0, Hi: 63}}
	pgstore.Timings().Apply(&kc)
	keeper, err := lease.StartKeeper(ctx, kc)
	if err != nil {
		log.Fatal(err)
	}
	gen, err := snowfence.New(snowfence.Config{Lease: keeper})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		gen.Close() // first: nothing is issued after its LastIssued
		// Releases the number, recording the end of the last ID issued
		// as its mark: the next holder starts above it.
		keeper.Close(ctx, gen.LastIssued())
	}()
	id, err := gen.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(id)
}
