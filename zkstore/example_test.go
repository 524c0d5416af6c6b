package zkstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/zkstore"
)

// A ZooKeeper store claimed through, with the lease tables' timings. Hold
// numbers through a Keeper (lease.StartKeeper) in a program; Claim and
// Extend are shown here to show what the store does.
func Example() {
	st, err := zkstore.Connect([]string{"127.0.0.1:2181"}, 10*time.Second, zkstore.Config{Path: "/snowfence"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	holder, err := lease.ThisProcess()
	if err != nil {
		fmt.Println(err)
		return
	}
	now := time.Now().UnixMilli()
	l, err := st.Claim(ctx, lease.ClaimRequest{Holder: holder, Range: lease.Range{Lo: 0, Hi: 63},
		NowMs: now, LeaseFor: zkstore.Timings().LeaseFor, MaxAhead: time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The mark first: issue only below the mark the store acknowledged.
	if l, err = st.Extend(ctx, l, now+60_000, zkstore.Timings().LeaseFor); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("machine", l.Machine, "token", l.Token)
}
