package snowfence_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/fakeclock"
)

func ExampleNew() {
	clk := fakeclock.New(time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC))
	g, err := snowfence.New(snowfence.Config{
		Lease:       snowfence.Static(37, 0), // a lease.Keeper in production
		Clock:       clk,
		ClockPolicy: snowfence.ClockOff,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	id, _ := g.Next(ctx)
	batch, _ := g.NextN(ctx, 3)
	fmt.Println(id)
	fmt.Println(batch)
	// Output:
	// 97301141913751552
	// [97301141913751553 97301141913751554 97301141913751555]
}

func ExampleGenerator_Next_clockBackwards() {
	clk := fakeclock.New(time.Date(2026, 9, 26, 12, 0, 0, 0, time.UTC))
	g, _ := snowfence.New(snowfence.Config{Lease: snowfence.Static(5, 0), Clock: clk, ClockPolicy: snowfence.ClockOff})
	ctx := context.Background()
	clk.Advance(280 * time.Millisecond)
	g.Next(ctx)
	clk.Step(-280 * time.Millisecond) // an NTP step back, as in the incident
	_, err := g.Next(ctx)
	fmt.Println(err)
	fmt.Println(g.Health().Reason)
	// Output:
	// snowfence: clock moved backwards by 280 ms (last issued 2026-09-26T12:00:00.280Z, clock reads 2026-09-26T12:00:00.000Z); refusing until the clock passes the last issued timestamp
	// clock-backwards
}

func ExampleParseID() {
	id, err := snowfence.ParseID("97301141913751557")
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := snowfence.Decode(id)
	fmt.Println(d.CreatedAt.Format(time.RFC3339Nano), d.Machine, d.Sequence)
	_, err = snowfence.ParseID("97301141913751557 ")
	fmt.Println(err)
	// Output:
	// 2026-09-26T12:00:00Z 37 5
	// snowfence: invalid ID "97301141913751557 ": character ' ' at offset 17 is not a decimal digit (no signs, spaces or separators)
}

func ExampleSchedule_Decode() {
	sched, _ := snowfence.ParseSchedule("v1,v2@2028-01-01T00:00:00Z")
	d, _ := sched.Decode(snowfence.MustParseID("683244571854022659"))
	b, _ := json.Marshal(d)
	fmt.Println(string(b))
	// Output:
	// {"id":"683244571854022659","layout":"v2","created_at":"2031-03-01T09:30:00.000Z","region":"2","region_number":2,"machine":170,"sequence":3}
}

func ExampleSchedule_DecodeNamed() {
	sched, _ := snowfence.ParseSchedule("v1,v2@2028-01-01T00:00:00Z")
	// In a holder, the names come from the region registry in its own
	// lease store (registry.Registry.Numbered).
	names := func(number int) (string, bool) {
		if number == 2 {
			return "eu-west-1", true
		}
		return "", false
	}
	for _, text := range []string{"683244571854022659", "683244571855595523"} {
		d, _ := sched.DecodeNamed(snowfence.MustParseID(text), names)
		b, _ := json.Marshal(d)
		fmt.Println(string(b))
	}
	// Output:
	// {"id":"683244571854022659","layout":"v2","created_at":"2031-03-01T09:30:00.000Z","region":"eu-west-1","region_number":2,"machine":170,"sequence":3}
	// {"id":"683244571855595523","layout":"v2","created_at":"2031-03-01T09:30:00.000Z","region":"","region_number":5,"machine":170,"sequence":3,"warning":"region number 5 is not in the region registry"}
}

func ExampleID_MarshalText() {
	b, _ := json.Marshal(struct {
		ID snowfence.ID `json:"id"`
	}{97301141913751557})
	fmt.Println(string(b))
	// Output: {"id":"97301141913751557"}
}
