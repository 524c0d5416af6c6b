package perimeter

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMayOpenPublicIDs: only callers whose policy says open_public_ids may
// open; the default policy may carry it for unlisted callers.
func TestMayOpenPublicIDs(t *testing.T) {
	r := newRig(t, `{"default": {"rate": 10, "burst": 1000, "open_public_ids": true}, "callers": {
		"spiffe://corp/orders": {"rate": 10, "burst": 1000, "open_public_ids": true},
		"billing.corp": {"rate": 10, "burst": 1000}}}`, nil)
	for _, tt := range []struct {
		id   string
		want error
	}{
		{orders, nil},
		{billing, ErrMayNotOpen},
		{"spiffe://corp/unlisted", nil},
	} {
		if err := r.p.MayOpenPublicIDs(requestFrom(r, tt.id)); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s: MayOpenPublicIDs = %v, want %v", tt.id, err, tt.want)
		}
	}
	// A reload that takes the permission away applies to open connections.
	req := requestFrom(r, orders)
	if err := r.writeCallers(`{"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 10, "burst": 1000}}}`); err != nil {
		t.Fatal(err)
	}
	if err := r.p.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := r.p.MayOpenPublicIDs(req); !errors.Is(err, ErrMayNotOpen) {
		t.Errorf("after the reload: %v, want ErrMayNotOpen", err)
	}
	if err := r.p.MayOpenPublicIDs(requestFrom(r, "spiffe://corp/unlisted")); !errors.Is(err, ErrCallerDenied) {
		t.Errorf("unlisted under deny: %v, want ErrCallerDenied", err)
	}
}

// TestMayOpenPublicIDsWithoutCallersFile: no callers file, nobody opens.
func TestMayOpenPublicIDsWithoutCallersFile(t *testing.T) {
	r := newRig(t, "", nil)
	if err := r.p.MayOpenPublicIDs(requestFrom(r, orders)); !errors.Is(err, ErrMayNotOpen) {
		t.Errorf("MayOpenPublicIDs = %v, want ErrMayNotOpen", err)
	}
}

// TestMayOpenPublicIDsPlainHTTP: without TLS the anonymous caller has the
// default policy's permission.
func TestMayOpenPublicIDsPlainHTTP(t *testing.T) {
	r := newRig(t, `{"default": {"rate": 10, "burst": 1000, "open_public_ids": true}, "callers": {}}`, nil)
	p, err := New(Config{CallersFile: r.callersFile, PollInterval: -1, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.MayOpenPublicIDs(httptest.NewRequest(http.MethodGet, "/v1/public-ids/x", nil)); err != nil {
		t.Errorf("MayOpenPublicIDs = %v, want nil", err)
	}
}

// TestMaySealPublicIDs: only callers whose policy says seal_public_ids may
// seal IDs of their choosing; the default policy may carry it for unlisted
// callers; it is a permission apart from open_public_ids, either way; the
// refusal names the member and where to set it.
func TestMaySealPublicIDs(t *testing.T) {
	r := newRig(t, `{"default": {"rate": 10, "burst": 1000, "seal_public_ids": true}, "callers": {
		"spiffe://corp/orders": {"rate": 10, "burst": 1000, "seal_public_ids": true},
		"billing.corp": {"rate": 10, "burst": 1000, "open_public_ids": true}}}`, nil)
	for _, tt := range []struct {
		id         string
		seal, open error
	}{
		{orders, nil, ErrMayNotOpen},
		{billing, ErrMayNotSeal, nil},
		{"spiffe://corp/unlisted", nil, ErrMayNotOpen},
	} {
		req := requestFrom(r, tt.id)
		if err := r.p.MaySealPublicIDs(req); !errors.Is(err, tt.seal) || (tt.seal == nil) != (err == nil) {
			t.Errorf("%s: MaySealPublicIDs = %v, want %v", tt.id, err, tt.seal)
		}
		if err := r.p.MayOpenPublicIDs(req); !errors.Is(err, tt.open) || (tt.open == nil) != (err == nil) {
			t.Errorf("%s: MayOpenPublicIDs = %v, want %v", tt.id, err, tt.open)
		}
	}
	err := r.p.MaySealPublicIDs(requestFrom(r, billing))
	if msg := fmt.Sprint(err); !strings.Contains(msg, `"seal_public_ids": true`) || !strings.Contains(msg, `"billing.corp" in "callers"`) {
		t.Errorf("refusal %q does not say which member to set where", msg)
	}
	// A reload that takes the permission away applies to open connections.
	req := requestFrom(r, orders)
	if err := r.writeCallers(`{"default": {"rate": 10, "burst": 1000}, "callers": {"spiffe://corp/orders": {"rate": 10, "burst": 1000}}}`); err != nil {
		t.Fatal(err)
	}
	if err := r.p.MaySealPublicIDs(req); !errors.Is(err, ErrMayNotSeal) {
		t.Errorf("after the reload: %v, want ErrMayNotSeal", err)
	}
	err = r.p.MaySealPublicIDs(requestFrom(r, "spiffe://corp/unlisted"))
	if msg := fmt.Sprint(err); !errors.Is(err, ErrMayNotSeal) || !strings.Contains(msg, `"default"`) {
		t.Errorf("unlisted under a default without the permission: %v, want ErrMayNotSeal naming \"default\"", err)
	}
	if err := r.writeCallers(`{"default": "deny", "callers": {}}`); err != nil {
		t.Fatal(err)
	}
	if err := r.p.MaySealPublicIDs(requestFrom(r, "spiffe://corp/unlisted")); !errors.Is(err, ErrCallerDenied) {
		t.Errorf("unlisted under deny: %v, want ErrCallerDenied", err)
	}
}

// TestMaySealPublicIDsWithoutCallersFile: no callers file, nobody seals
// IDs of its choosing (as nobody opens), with mutual TLS or without a
// perimeter at all (plain HTTP, the zero Config).
func TestMaySealPublicIDsWithoutCallersFile(t *testing.T) {
	r := newRig(t, "", nil)
	if err := r.p.MaySealPublicIDs(requestFrom(r, orders)); !errors.Is(err, ErrMayNotSeal) || !strings.Contains(err.Error(), "seal_public_ids") {
		t.Errorf("MaySealPublicIDs = %v, want ErrMayNotSeal naming seal_public_ids", err)
	}
	p, err := New(Config{PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.MaySealPublicIDs(httptest.NewRequest(http.MethodPost, "/v1/public-ids", nil)); !errors.Is(err, ErrMayNotSeal) {
		t.Errorf("plain HTTP, no callers file: MaySealPublicIDs = %v, want ErrMayNotSeal", err)
	}
}

// TestMaySealPublicIDsPlainHTTP: without TLS the anonymous caller has the
// default policy's permission, and a refusal names it so.
func TestMaySealPublicIDsPlainHTTP(t *testing.T) {
	r := newRig(t, `{"default": {"rate": 10, "burst": 1000, "seal_public_ids": true}, "callers": {}}`, nil)
	p, err := New(Config{CallersFile: r.callersFile, PollInterval: -1, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	req := httptest.NewRequest(http.MethodPost, "/v1/public-ids", nil)
	if err := p.MaySealPublicIDs(req); err != nil {
		t.Errorf("MaySealPublicIDs = %v, want nil", err)
	}
	writeAtomic(t, r.callersFile, []byte(`{"default": {"rate": 10, "burst": 1000}, "callers": {}}`))
	if err := p.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := p.MaySealPublicIDs(req); !errors.Is(err, ErrMayNotSeal) || !strings.Contains(err.Error(), "anonymous caller") {
		t.Errorf("MaySealPublicIDs = %v, want ErrMayNotSeal for the anonymous caller", err)
	}
}
