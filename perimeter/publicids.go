package perimeter

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/snowfence/snowfence/server"
)

var _ server.PublicIDOpeners = (*Perimeter)(nil)

// ErrMayNotOpen is wrapped by the refusal (a 403) of a caller whose policy
// in the callers file does not say "open_public_ids": true, or of every
// caller when there is no callers file.
var ErrMayNotOpen = errors.New("perimeter: caller may not open public IDs")

// MayOpenPublicIDs implements server.PublicIDOpeners: r's caller (as for
// Take: the identity of the connection's verified certificate, or the one
// anonymous caller "" without TLS) may open sealed public IDs when its
// policy in the callers file, or the default policy for an unlisted
// caller, has "open_public_ids": true. A connection whose certificate is
// no longer trusted is refused with ErrUntrusted, as for Take. Without a
// callers file no caller may open. It takes nothing from the caller's
// quota.
func (p *Perimeter) MayOpenPublicIDs(r *http.Request) error {
	t := p.callers.Load()
	cc := p.connOf(r, t)
	if err := cc.trusted(time.Now()); err != nil {
		return err
	}
	if t == nil {
		return fmt.Errorf("%w: there is no callers file to grant open_public_ids: give serve one (--callers) whose policy for the caller says \"open_public_ids\": true, "+
			"or, where no caller you do not trust can reach the listener, start serve with --public-id-open-without-tls", ErrMayNotOpen)
	}
	if !cc.has {
		return fmt.Errorf("%w: the connection names no caller", ErrMayNotOpen)
	}
	pol, _, ok := t.callers.Lookup(cc.id)
	if !ok {
		return fmt.Errorf("%w: %q is not listed in the callers file and the default is deny", ErrCallerDenied, cc.id)
	}
	if !pol.OpenPublicIDs {
		return fmt.Errorf("%w: %q's policy lacks \"open_public_ids\": true", ErrMayNotOpen, cc.id)
	}
	return nil
}
