package main

import (
	"strings"
	"testing"
)

// TestLeasesUsageNamesEveryVerb: the usage line of snowfence leases names
// every verb it takes (history was missing from it).
func TestLeasesUsageNamesEveryVerb(t *testing.T) {
	_, _, errOut := runCLI(t, "leases")
	first, _, _ := strings.Cut(errOut, "\n")
	for _, verb := range []string{"init", "list", "show N", "key N", "history N", "quarantine N", "release N", "raise-marks"} {
		if !strings.Contains(first, verb) {
			t.Errorf("the usage line lacks %q: %s", verb, first)
		}
	}
}
