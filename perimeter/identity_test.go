package perimeter

import (
	"crypto/x509"
	"net/url"
	"strings"
	"testing"
)

func TestIdentity(t *testing.T) {
	uri := func(s string) *url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		want string // "": names no caller
	}{
		{"SPIFFE ID", &x509.Certificate{URIs: []*url.URL{uri(orders)}, DNSNames: []string{"orders.corp"}}, orders},
		{"opaque URI", &x509.Certificate{URIs: []*url.URL{uri("urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66")}}, "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66"},
		{"scheme lower-cased by url.Parse", &x509.Certificate{URIs: []*url.URL{uri("SPIFFE://corp/orders")}}, orders},
		{"host name", &x509.Certificate{DNSNames: []string{billing, "other.corp"}}, billing},
		{"host name lower-cased", &x509.Certificate{DNSNames: []string{"Billing.CORP"}}, billing},
		{"single label", &x509.Certificate{DNSNames: []string{"localhost"}}, "localhost"},
		{"digits and hyphens", &x509.Certificate{DNSNames: []string{"9-a.b0"}}, "9-a.b0"},
		{"relative URI, no fall-through to DNS", &x509.Certificate{URIs: []*url.URL{uri(billing)}, DNSNames: []string{billing}}, ""},
		{"nil URI", &x509.Certificate{URIs: []*url.URL{nil}, DNSNames: []string{billing}}, ""},
		{"DNS SAN spelled as a URI", &x509.Certificate{DNSNames: []string{orders}}, ""},
		{"wildcard", &x509.Certificate{DNSNames: []string{"*.corp", billing}}, ""},
		{"underscore", &x509.Certificate{DNSNames: []string{"a_b.corp"}}, ""},
		{"trailing dot", &x509.Certificate{DNSNames: []string{"billing.corp."}}, ""},
		{"empty label", &x509.Certificate{DNSNames: []string{"billing..corp"}}, ""},
		{"leading hyphen", &x509.Certificate{DNSNames: []string{"-a.corp"}}, ""},
		{"trailing hyphen", &x509.Certificate{DNSNames: []string{"a-.corp"}}, ""},
		{"label of 64", &x509.Certificate{DNSNames: []string{strings.Repeat("a", 64) + ".corp"}}, ""},
		{"host name with port", &x509.Certificate{DNSNames: []string{"billing.corp:443"}}, ""},
		{"non-ASCII", &x509.Certificate{DNSNames: []string{"bïlling.corp"}}, ""},
		{"empty DNS SAN", &x509.Certificate{DNSNames: []string{""}}, ""},
		{"no SAN", &x509.Certificate{}, ""},
		{"nil", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, ok := Identity(tc.cert)
			if ok != (tc.want != "") || id != tc.want {
				t.Errorf("Identity = %q, %v; want %q, %v", id, ok, tc.want, tc.want != "")
			}
		})
	}
}

// TestIdentityKindsDisjoint: every identity a callers file accepts is
// either a host name or an absolute URI, never both, and is spelled as
// Identity returns it for a certificate carrying it as that kind of SAN.
func TestIdentityKindsDisjoint(t *testing.T) {
	for _, id := range []string{orders, billing, "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66", "localhost", "https://corp/x?y=1"} {
		if err := checkIdentity(id); err != nil {
			t.Fatalf("checkIdentity(%q): %v", id, err)
		}
		var cert x509.Certificate
		if isHostName(id) {
			cert.DNSNames = []string{id}
		} else {
			u, err := url.Parse(id)
			if err != nil || u.Scheme == "" {
				t.Fatalf("%q: accepted, neither a host name nor an absolute URI", id)
			}
			cert.URIs = []*url.URL{u}
		}
		if got, ok := Identity(&cert); !ok || got != id {
			t.Errorf("a certificate carrying %q is named %q, %v", id, got, ok)
		}
	}
}
