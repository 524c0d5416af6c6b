package testbound

import (
	"testing"
	"time"
)

// TestFromEnv: a test build's bound from its environment — none, a
// self-fence, a self-fence with a reserve — and the values refused.
func TestFromEnv(t *testing.T) {
	env := func(sf, r string) func(string) string {
		return func(k string) string {
			return map[string]string{EnvMaxSelfFence: sf, EnvMaxReserve: r}[k]
		}
	}
	for _, tc := range []struct {
		sf, r     string
		want      Bound
		wantError bool
	}{
		{"", "", Bound{}, false},
		{"6s", "", Of(6 * time.Second), false},
		{"6s", "12s", Of(6 * time.Second).WithMaxReserve(12 * time.Second), false},
		{"", "12s", Bound{}, true}, // a reserve needs a self-fence
		{"6s", "-1s", Bound{}, true},
		{"6s", "0s", Bound{}, true},
		{"soon", "", Bound{}, true},
	} {
		got, err := FromEnv(env(tc.sf, tc.r))
		if got != tc.want || (err != nil) != tc.wantError {
			t.Errorf("FromEnv(%s=%q, %s=%q) = %+v, %v; want %+v, error %v", EnvMaxSelfFence, tc.sf, EnvMaxReserve, tc.r, got, err, tc.want, tc.wantError)
		}
	}
}
