package perimeter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/snowfence/snowfence"
)

// ErrInvalidCallers is wrapped by every error of ParseCallers: the callers
// file is not the documented format or breaks one of its bounds.
var ErrInvalidCallers = errors.New("perimeter: invalid callers file")

// Bounds of the callers file.
const (
	// MinBurst is the smallest burst a policy may have: the largest batch,
	// so that every request a caller may send can be allowed.
	MinBurst = snowfence.MaxBatch
	// MaxBurst and MaxRate bound a policy, keeping the limiter's arithmetic
	// exact.
	MaxBurst = 1 << 30
	MaxRate  = 1e9
	// maxIdentityLen bounds one identity in the file.
	maxIdentityLen = 2048
)

// Policy is one caller's quota: a token bucket that refills at Rate IDs per
// second and holds at most Burst IDs. A request for n IDs takes n.
type Policy struct {
	// Rate is the sustained allowance in IDs per second, > 0.
	Rate float64
	// Burst is the most IDs taken at once after a pause, at least MinBurst.
	Burst int
	// OpenPublicIDs lets the caller open sealed public IDs (GET
	// /v1/public-ids/{pid}; see Perimeter.MayOpenPublicIDs).
	OpenPublicIDs bool
	// SealPublicIDs lets the caller seal IDs of its choosing (POST
	// /v1/public-ids; see Perimeter.MaySealPublicIDs). Sealing is
	// deterministic, so a caller that may seal can test any guess of the
	// internal ID behind a public ID (docs/public-ids.md). False: it may
	// still mint new IDs sealed (POST /v1/public-ids:mint).
	SealPublicIDs bool
}

// Callers is a parsed callers file: which identities may connect, and each
// one's quota.
type Callers struct {
	// Listed maps identity (an absolute URI such as spiffe://corp/orders,
	// or a lower-case host name; see Identity) to its policy.
	Listed map[string]Policy
	// Default is the policy of every identity not listed, each with a
	// bucket of its own; nil means unlisted identities are refused ("deny").
	Default *Policy
}

// Lookup returns the policy of identity id: listed says whether it is
// listed, ok whether it may connect at all.
func (c *Callers) Lookup(id string) (p Policy, listed, ok bool) {
	if p, found := c.Listed[id]; found {
		return p, true, true
	}
	if c.Default != nil {
		return *c.Default, false, true
	}
	return Policy{}, false, false
}

// ParseCallers parses a callers file. The format is one JSON object with
// exactly two members:
//
//	{
//	  "default": "deny",
//	  "callers": {
//	    "spiffe://corp/orders": {"rate": 50000, "burst": 10000},
//	    "billing.corp":         {"rate": 2000, "burst": 1000}
//	  }
//	}
//
// "default" is "deny" or a policy {"rate": R, "burst": B}: R IDs per second
// (a positive number up to MaxRate) and B IDs (an integer from MinBurst, the
// largest batch, up to MaxBurst), with an optional "open_public_ids": true
// that lets the caller open sealed public IDs and an optional
// "seal_public_ids": true that lets it seal IDs of its choosing (each false
// when absent). "callers" maps each identity to its policy. Parsing is strict: both members are required, member names are
// case-sensitive, unknown or repeated members (a caller listed twice too)
// and trailing data are errors, and identities are non-empty, at most 2048
// bytes, without spaces or control characters, and do not start with "("
// (metric label values such as "(unlisted)" are kept for the perimeter).
// Each identity is one Identity can return, spelled as it returns it:
// either an absolute URI (it has a scheme, such as spiffe://corp/orders) in
// url.URL's String form, or a host name (billing.corp) in lower case. A
// string of neither kind (a wildcard "*.corp", a relative "corp/orders", a
// host name with '_') is an error, since no certificate names that caller,
// and so is a different spelling of one ("Billing.corp"), which would never
// match the certificate it means.
//
// JSON, rather than a line format, because identities are URIs full of
// ':' and '/', so a line format would need quoting rules of its own, while
// JSON's are known to every editor, linter and config tool that will write
// the file; the standard library parses it.
func ParseCallers(b []byte) (*Callers, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	c := &Callers{Listed: map[string]Policy{}}
	var sawDefault, sawCallers bool
	err := object(dec, func(key string) error {
		switch key {
		case "default":
			if sawDefault {
				return errors.New(`"default" appears twice`)
			}
			sawDefault = true
			p, err := policyOrDeny(dec)
			if err != nil {
				return fmt.Errorf(`"default": %w`, err)
			}
			c.Default = p
		case "callers":
			if sawCallers {
				return errors.New(`"callers" appears twice`)
			}
			sawCallers = true
			return object(dec, func(id string) error {
				if err := checkIdentity(id); err != nil {
					return err
				}
				if _, dup := c.Listed[id]; dup {
					return fmt.Errorf("caller %q is listed twice", id)
				}
				p, err := policy(dec)
				if err != nil {
					return fmt.Errorf("caller %q: %w", id, err)
				}
				c.Listed[id] = p
				return nil
			})
		default:
			return fmt.Errorf(`unknown member %q; the members are "default" and "callers"`, key)
		}
		return nil
	})
	if err == nil {
		if _, e := dec.Token(); e != io.EOF {
			err = errors.New("trailing data after the object")
		}
	}
	if err == nil && !sawDefault {
		err = errors.New(`"default" is required: "deny" or {"rate": R, "burst": B}`)
	}
	if err == nil && !sawCallers {
		err = errors.New(`"callers" is required (it may be {})`)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidCallers, err)
	}
	return c, nil
}

// parseCallersFile parses b, the contents of the callers file at path
// (named in errors).
func parseCallersFile(path string, b []byte) (*Callers, error) {
	c, err := ParseCallers(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// object reads a JSON object from dec, calling member for each key with
// dec positioned at its value; member must consume the value.
func object(dec *json.Decoder, member func(key string) error) error {
	if err := delim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := t.(string)
		if !ok {
			return fmt.Errorf("want a member name, got %v", t)
		}
		if err := member(key); err != nil {
			return err
		}
	}
	return delim(dec, '}')
}

func delim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return fmt.Errorf("unexpected end of file, want '%c'", want)
		}
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("want '%c', got %v", want, t)
	}
	return nil
}

// policyOrDeny reads "deny" (nil) or a policy.
func policyOrDeny(dec *json.Decoder) (*Policy, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if s != "deny" {
			return nil, fmt.Errorf(`want "deny" or a policy object, got %q`, s)
		}
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	p, err := policy(d)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// policy reads {"rate": R, "burst": B} with the optional permissions
// "open_public_ids" and "seal_public_ids", each true or false.
func policy(dec *json.Decoder) (Policy, error) {
	var p Policy
	var sawRate, sawBurst bool
	perms := []permission{
		{name: "open_public_ids", to: &p.OpenPublicIDs},
		{name: "seal_public_ids", to: &p.SealPublicIDs},
	}
	err := object(dec, func(key string) error {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		for i := range perms {
			if key == perms[i].name {
				return perms[i].set(t)
			}
		}
		if key != "rate" && key != "burst" {
			return fmt.Errorf(`unknown member %q; a policy has "rate", "burst" and optionally "open_public_ids" and "seal_public_ids"`, key)
		}
		num, ok := t.(json.Number)
		if !ok {
			return fmt.Errorf("%q: want a number, got %v", key, t)
		}
		switch key {
		case "rate":
			if sawRate {
				return errors.New(`"rate" appears twice`)
			}
			sawRate = true
			r, err := strconv.ParseFloat(string(num), 64)
			if err != nil || !(r > 0) || r > MaxRate || math.IsInf(r, 0) {
				return fmt.Errorf(`"rate" is %s; want IDs per second, > 0 and ≤ %g`, num, float64(MaxRate))
			}
			p.Rate = r
		case "burst":
			if sawBurst {
				return errors.New(`"burst" appears twice`)
			}
			sawBurst = true
			b, err := strconv.ParseInt(string(num), 10, 64)
			if err != nil || b < MinBurst || b > MaxBurst {
				return fmt.Errorf(`"burst" is %s; want a whole number of IDs from %d (the largest batch, so a batch can ever be allowed) to %d`, num, MinBurst, MaxBurst)
			}
			p.Burst = int(b)
		}
		return nil
	})
	if err != nil {
		return Policy{}, err
	}
	if !sawRate || !sawBurst {
		return Policy{}, errors.New(`a policy needs both "rate" (IDs per second) and "burst" (IDs)`)
	}
	return p, nil
}

// permission is one optional true-or-false member of a policy.
type permission struct {
	name string
	to   *bool
	saw  bool
}

// set reads the permission's value t, once.
func (m *permission) set(t json.Token) error {
	if m.saw {
		return fmt.Errorf("%q appears twice", m.name)
	}
	m.saw = true
	b, ok := t.(bool)
	if !ok {
		return fmt.Errorf("%q: want true or false, got %v", m.name, t)
	}
	*m.to = b
	return nil
}

func checkIdentity(id string) error {
	switch {
	case id == "":
		return errors.New("an identity is empty")
	case len(id) > maxIdentityLen:
		return fmt.Errorf("identity %.40q… is longer than %d bytes", id, maxIdentityLen)
	case strings.HasPrefix(id, "("):
		return fmt.Errorf("identity %q starts with \"(\"; no certificate SAN does", id)
	case strings.IndexFunc(id, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar }) >= 0:
		return fmt.Errorf("identity %q holds a space, control character or invalid UTF-8", id)
	}
	return checkIdentityKind(id)
}
