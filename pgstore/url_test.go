package pgstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// TestConnectNeverShowsThePassword: a raw '@' in a URL's password made pgx
// read the rest of it as the host and print it in its error ("lookup
// cret@127.0.0.1: no such host"); Connect refuses such a URL without
// showing it, and no other refusal shows the password either.
func TestConnectNeverShowsThePassword(t *testing.T) {
	for _, c := range []struct {
		url    string
		secret string
		want   error
	}{
		{"postgres://u:se@cret@127.0.0.1:1/db", "cret", lease.ErrInvalid},
		{"postgresql://u:p@ss@w0rd9@127.0.0.1:1/db?sslmode=disable", "w0rd9", lease.ErrInvalid},
		{"postgres://u:se%40cret@127.0.0.1:1/db", "cret", nil},              // encoded: refused only by the closed port
		{"postgres://u:secret@127.0.0.1:1/db?sslmode=bogus", "secret", nil}, // pgx's own redaction
	} {
		_, err := pgstore.Connect(t.Context(), c.url, pgstore.Config{})
		if err == nil {
			t.Fatalf("%s: connected to port 1", c.url)
		}
		if strings.Contains(err.Error(), c.secret) {
			t.Errorf("the error shows the password's %q: %v", c.secret, err)
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.url, err, c.want)
		}
	}
}
