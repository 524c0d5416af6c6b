package perimeter

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/snowfence/snowfence/server"
)

var (
	_ server.PublicIDOpeners = (*Perimeter)(nil)
	_ server.PublicIDSealers = (*Perimeter)(nil)
)

// ErrMayNotOpen is wrapped by the refusal (a 403) of a caller whose policy
// in the callers file does not say "open_public_ids": true, or of every
// caller when there is no callers file.
var ErrMayNotOpen = errors.New("perimeter: caller may not open public IDs")

// ErrMayNotSeal is wrapped by the refusal (a 403) of a caller whose policy
// in the callers file does not say "seal_public_ids": true, or of every
// caller when there is no callers file.
var ErrMayNotSeal = errors.New("perimeter: caller may not seal IDs of its choosing into public IDs")

// MayOpenPublicIDs implements server.PublicIDOpeners: r's caller (as for
// Take: the identity of the connection's verified certificate, or the one
// anonymous caller "" without TLS) may open sealed public IDs when its
// policy in the callers file, or the default policy for an unlisted
// caller, has "open_public_ids": true. A connection whose certificate is
// no longer trusted is refused with ErrUntrusted, as for Take. Without a
// callers file no caller may open. It takes nothing from the caller's
// quota.
func (p *Perimeter) MayOpenPublicIDs(r *http.Request) error {
	return p.mayPublicIDs(r, "open_public_ids", ErrMayNotOpen, func(pol Policy) bool { return pol.OpenPublicIDs })
}

// MaySealPublicIDs implements server.PublicIDSealers: r's caller may seal
// IDs of its choosing (POST /v1/public-ids) when its policy, or the
// default policy for an unlisted caller, has "seal_public_ids": true; as
// for MayOpenPublicIDs otherwise (an untrusted connection is refused with
// ErrUntrusted, and without a callers file no caller may seal). Minting
// sealed IDs (POST /v1/public-ids:mint) needs no permission beyond Take.
func (p *Perimeter) MaySealPublicIDs(r *http.Request) error {
	return p.mayPublicIDs(r, "seal_public_ids", ErrMayNotSeal, func(pol Policy) bool { return pol.SealPublicIDs })
}

// mayPublicIDs is the one check of a public-ID permission: member is its
// name in the callers file, refused the error its refusals wrap, and
// granted reads it from a policy.
func (p *Perimeter) mayPublicIDs(r *http.Request, member string, refused error, granted func(Policy) bool) error {
	t := p.callers.Load()
	cc := p.connOf(r, t)
	if err := cc.trusted(time.Now()); err != nil {
		return err
	}
	if t == nil {
		return fmt.Errorf("%w: there is no callers file to grant %q: true: give serve one (--callers) whose policy for the caller says so, "+
			"or, where no caller you do not trust can reach the listener, start serve with --public-id-open-without-tls", refused, member)
	}
	if !cc.has {
		return fmt.Errorf("%w: the connection names no caller", refused)
	}
	pol, listed, ok := t.callers.Lookup(cc.id)
	if !ok {
		return fmt.Errorf("%w: %q is not listed in the callers file and the default is deny", ErrCallerDenied, cc.id)
	}
	if !granted(pol) {
		who, where := fmt.Sprintf("%q", cc.id), fmt.Sprintf("the caller's policy (%q in \"callers\")", cc.id)
		if cc.id == "" {
			who = "the anonymous caller of plain HTTP"
		}
		if !listed {
			where = `"default", the policy of callers not listed,`
		}
		return fmt.Errorf("%w: the policy of %s lacks %q: true; to grant it, add it to %s in the callers file", refused, who, member, where)
	}
	return nil
}
