package pgstore

import (
	"fmt"
	"strings"

	"github.com/snowfence/snowfence/lease"
)

// checkURL refuses a postgres:// URL whose authority holds more than one
// '@': a password with a raw '@' in it, which pgx reads as ending the
// password there and the rest as part of the host — and then prints that
// rest, a piece of the password, in its "cannot resolve host" errors. The
// refusal never shows the URL.
func checkURL(url string) error {
	rest, ok := strings.CutPrefix(url, "postgres://")
	if !ok {
		if rest, ok = strings.CutPrefix(url, "postgresql://"); !ok {
			return nil // the key=value form quotes its values
		}
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if n := strings.Count(rest, "@"); n > 1 {
		return fmt.Errorf("%w: pgstore: the PostgreSQL URL has %d '@' before its host: a password holding '@' must be percent-encoded (%%40; '/' as %%2F, '?' as %%3F, '#' as %%23, ':' as %%3A); "+
			"the URL is not shown, as it holds the password", lease.ErrInvalid, n)
	}
	return nil
}
