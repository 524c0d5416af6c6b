package publicid

import (
	"errors"
	"testing"
)

// TestReviewKeysetErrorsNeverQuoteAKey: ParseKeyset promises its errors
// name the version, never the key, but it quotes the "status" value and
// member names verbatim. A key pasted into the wrong place of the file (a
// slip when editing it by hand during a rotation) then reaches the error
// that serve prints and logs at start.
func TestReviewKeysetErrorsNeverQuoteAKey(t *testing.T) {
	k := testKey3
	for name, text := range map[string]string{
		"key in status":      `{"keys": {"2": {"status": "` + k + `", "key": "` + testKey2 + `"}}}`,
		"key as version":     `{"keys": {"` + k + `": {"status": "primary", "key": "` + testKey2 + `"}}}`,
		"key as member name": `{"keys": {"2": {"status": "primary", "` + k + `": "x"}}}`,
		"key as top member":  `{"` + k + `": {}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseKeyset([]byte(text))
			if !errors.Is(err, ErrInvalidKeyset) {
				t.Fatalf("ParseKeyset: %v; want ErrInvalidKeyset", err)
			}
			checkNoKeys(t, "error", err.Error())
		})
	}
}
