package perimeter

import (
	"errors"
	"net/http"
	"net/http/httptest"
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
