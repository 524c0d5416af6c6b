package metrics_test

import (
	"testing"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/lease/registry/registrytest"
	"github.com/snowfence/snowfence/metrics"
)

func TestRegionNumbers(t *testing.T) {
	twoRegions := registrytest.Of(
		registry.Region{Name: "us", Number: 0, CreatedMs: 1},
		registry.Region{Name: "old", Number: 1, CreatedMs: 2, RetiredMs: 3}, // retired: its number is never reused
	)
	v1v2, err := snowfence.ParseSchedule("v1,v2@2027-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	v2v1, err := snowfence.ParseSchedule("v2,v1@2027-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name              string
		sched             snowfence.Schedule
		reg               registry.Registry
		wantLeft, wantAll int
	}{
		{"v2 last, two regions had", v1v2, twoRegions, 6, 8},
		{"v2 last, no registry written", v1v2, registry.Registry{}, 0, 0},
		{"v1 last: no region bits", v2v1, twoRegions, 0, 0},
		{"v1 alone", snowfence.DefaultSchedule(), twoRegions, 0, 0},
		{"zero schedule", snowfence.Schedule{}, twoRegions, 0, 0},
	} {
		if left, total := metrics.RegionNumbers(c.sched, c.reg); left != c.wantLeft || total != c.wantAll {
			t.Errorf("%s: RegionNumbers = %d, %d; want %d, %d", c.name, left, total, c.wantLeft, c.wantAll)
		}
	}
}
