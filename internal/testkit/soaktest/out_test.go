//go:build linux

package soaktest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/internal/testkit/wire"
)

// Each event a child reports arrives as its frame; a refusal is a fenced
// frame exactly when the error is ErrFenced.
func TestOutFrames(t *testing.T) {
	var buf bytes.Buffer
	out := NewOut(&buf)
	out.Claimed(1, 17, 8)
	out.NoClaim(0, errors.New("no free number"))
	out.IDs(1, []snowfence.ID{5, 6, 7})
	out.Refused(1, fmt.Errorf("batch: %w", snowfence.ErrFenced))
	out.Refused(0, errors.New("deadline exceeded"))
	out.Counts(12, 3400)
	out.Echo("resumed")
	out.Fatal(errors.New("config: bad"))
	var got []string
	if err := wire.Read(&buf, func(f wire.Frame) { got = append(got, f.String()) }); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"claimed 1 17 8",
		"noclaim 0 no free number",
		"ids 1 5 6 7",
		"fenced 1 batch: " + snowfence.ErrFenced.Error(),
		"refused 0 deadline exceeded",
		"stats 0 12 3400",
		"echo 0 resumed",
		"fatal 0 config: bad",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got frames\n%q\nwant\n%q", got, want)
	}
}
