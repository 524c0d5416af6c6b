package perimeter

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrNoIdentity is the handshake's refusal of a verified certificate that
// names no caller (see Identity): its first URI SAN is not an absolute URI,
// or it has no URI SAN and its first DNS SAN is not a host name, or it has
// neither.
var ErrNoIdentity = errors.New("perimeter: the client certificate names no caller (no absolute URI SAN, and no host name as DNS SAN)")

// maxHostLen is the longest host name, in its text form (RFC 1035 §2.3.4).
const maxHostLen = 253

// Identity returns the caller a verified certificate names. There are two
// kinds of identity, and no string is of both kinds:
//
//   - If the certificate has a URI SAN, its first one names the caller, in
//     the URL's String form (a SPIFFE ID such as spiffe://corp/orders), and
//     only if it is an absolute URI: it has a scheme. Opaque forms
//     (urn:uuid:…) are absolute URIs and name callers too. A first URI SAN
//     without a scheme ("billing.corp", which crypto/x509 accepts as a
//     relative reference) names no caller, and then neither does any DNS
//     SAN: a certificate was issued with a URI SAN to be named by it, and
//     falling through to a DNS SAN would give a botched workload
//     certificate the name of whatever host it also lists.
//   - Else the first DNS SAN names the caller if it is a host name: labels
//     of ASCII letters, digits and hyphens (not first or last in a label),
//     1 to 63 bytes each, joined by dots, 253 bytes at most, with no
//     trailing dot. DNS names are case-insensitive, so the identity is the
//     name lower-cased (a callers file lists it lower-cased). A wildcard
//     ("*.corp") names many hosts, not one caller, and names none here;
//     so does any other string crypto/x509 takes as a DNS SAN but is not a
//     host name (it accepts any IA5 string, "spiffe://corp/orders"
//     included).
//
// A host name holds no ':' and an absolute URI always does, so a DNS SAN
// can never be taken for a URI identity nor a URI SAN for a DNS one. ok is
// false when the certificate names no caller; the subject's common name is
// never used (Go's verifier ignores it too).
func Identity(cert *x509.Certificate) (id string, ok bool) {
	id, err := identityOf(cert)
	return id, err == nil
}

// identityOf is Identity with the reason a certificate names no caller.
func identityOf(cert *x509.Certificate) (string, error) {
	if cert == nil {
		return "", errors.New("no certificate")
	}
	if len(cert.URIs) > 0 {
		u := cert.URIs[0]
		if u == nil {
			return "", errors.New("its first URI SAN is nil")
		}
		if u.Scheme == "" {
			return "", fmt.Errorf("its first URI SAN %q is not an absolute URI (it has no scheme)", u.String())
		}
		return u.String(), nil
	}
	if len(cert.DNSNames) > 0 {
		name := cert.DNSNames[0]
		if !isHostName(name) {
			return "", fmt.Errorf("its first DNS SAN %q is not a host name", name)
		}
		return lowerASCII(name), nil
	}
	return "", errors.New("it has no URI or DNS SAN")
}

// isHostName reports whether s is a host name in the sense of RFC 1123
// §2.1 (see Identity), in any case.
func isHostName(s string) bool {
	if s == "" || len(s) > maxHostLen {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// lowerASCII lower-cases an ASCII string, without allocating when it is
// lower-case already.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// checkIdentityKind says why id, from a callers file, is not an identity
// Identity could return: it must be a lower-case host name or an absolute
// URI in the form url.URL.String gives it.
func checkIdentityKind(id string) error {
	if isHostName(id) {
		if l := lowerASCII(id); l != id {
			return fmt.Errorf("identity %q: DNS names are compared lower-cased; write %q", id, l)
		}
		return nil
	}
	u, err := url.Parse(id)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("identity %q is neither an absolute URI (such as spiffe://corp/orders) nor a host name (such as billing.corp); no certificate names such a caller", id)
	}
	if s := u.String(); s != id {
		return fmt.Errorf("identity %q: a certificate with this URI SAN is named %q; write that", id, s)
	}
	return nil
}
