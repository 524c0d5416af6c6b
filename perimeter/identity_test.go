package perimeter

import (
	"crypto/x509"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/snowfence/snowfence/internal/testkit/testpki"
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

// TestDNSNameSpelledAsSPIFFEIDIsNoIdentity: a DNS SAN that is not a host name,
// or a URI SAN without a scheme, names no caller. A certificate with no URI
// SAN whose DNS SAN is the text of a listed SPIFFE ID was taken for that
// SPIFFE ID (an adversarial review found it): crypto/x509 accepts any IA5
// string as a dNSName, so a CA (or a team allowed to request DNS names from
// it, as cert-manager style issuers allow) can mint "spiffe://corp/orders" as
// a DNS name and get orders' authorization and quota. Identities of the two
// kinds share no namespace: a DNS SAN that is not a host name (it holds ':' or
// '/'), and a URI SAN without a scheme, name no caller.
func TestDNSNameSpelledAsSPIFFEIDIsNoIdentity(t *testing.T) {
	r := newRig(t, defaultCallers, nil)
	leaf := r.ca.Client(t, testpki.Options{DNSNames: []string{orders}})
	if id, ok := Identity(leaf.Cert); ok && id == orders {
		t.Errorf("Identity of a certificate whose only SAN is the DNS name %q = %q: the DNS SAN is taken for the SPIFFE ID", orders, id)
	}
	before := r.issued()
	resp, _, err := r.post(r.client(leaf, nil), "/v1/ids")
	if err == nil && resp.StatusCode == http.StatusOK {
		t.Errorf("a certificate with only a DNS SAN spelled %q got IDs as that caller (%d issued)", orders, r.issued()-before)
	}
	// The reverse: crypto/x509 also takes a relative reference as a URI
	// SAN, so a URI SAN "billing.corp" (no scheme) is the DNS-named caller.
	rel := r.ca.Client(t, testpki.Options{URIs: []string{billing}})
	if id, ok := Identity(rel.Cert); ok && id == billing {
		t.Errorf("Identity of a certificate whose only SAN is the relative URI %q = %q: the URI SAN is taken for the DNS-named caller", billing, id)
	}
}
