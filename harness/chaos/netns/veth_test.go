package netns

import (
	"errors"
	"net/netip"
	"testing"
)

func TestCheckVeth(t *testing.T) {
	p := netip.MustParsePrefix
	for _, tc := range []struct {
		name, host, inside string
		subnet             netip.Prefix
		want               error
	}{
		{"ok", "sfch-1-0s", "s0", p("10.237.0.0/30"), nil},
		{"host without the prefix", "eth9", "s0", p("10.237.0.0/30"), ErrInvalidName},
		{"only the prefix", "sfch-", "s0", p("10.237.0.0/30"), ErrInvalidName},
		{"too long", "sfch-0123456789a", "s0", p("10.237.0.0/30"), ErrInvalidName},
		{"bad character", "sfch-1 0", "s0", p("10.237.0.0/30"), ErrInvalidName},
		{"empty inside", "sfch-1-0s", "", p("10.237.0.0/30"), ErrInvalidName},
		{"not a /30", "sfch-1-0s", "s0", p("10.237.0.0/24"), ErrInvalidAddress},
		{"public", "sfch-1-0s", "s0", p("8.8.8.0/30"), ErrInvalidAddress},
		{"IPv6", "sfch-1-0s", "s0", p("fd00::/126"), ErrInvalidAddress},
	} {
		if err := checkVeth(tc.host, tc.inside, tc.subnet); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: checkVeth(%q, %q, %v) = %v, want %v", tc.name, tc.host, tc.inside, tc.subnet, err, tc.want)
		}
	}
}

func TestVethAddrs(t *testing.T) {
	h, i := vethAddrs(netip.MustParsePrefix("10.237.1.5/30"))
	if h.String() != "10.237.1.5" || i.String() != "10.237.1.6" {
		t.Errorf("vethAddrs(10.237.1.5/30) = %v, %v; want 10.237.1.5, 10.237.1.6", h, i)
	}
}
