package perimeter

import (
	"crypto/x509"
	"errors"
)

// ErrNoIdentity is the handshake's refusal of a verified certificate that
// names no caller: it has neither a URI SAN nor a DNS SAN.
var ErrNoIdentity = errors.New("perimeter: the client certificate names no caller (no URI or DNS SAN)")

// Identity returns the caller a verified certificate names: its first URI
// SAN (a SPIFFE ID such as spiffe://corp/orders) in the URL's String form,
// else its first DNS SAN. ok is false when it has neither; the subject's
// common name is never used (Go's verifier ignores it too).
func Identity(cert *x509.Certificate) (id string, ok bool) {
	if cert == nil {
		return "", false
	}
	if len(cert.URIs) > 0 && cert.URIs[0] != nil {
		if s := cert.URIs[0].String(); s != "" {
			return s, true
		}
	}
	if len(cert.DNSNames) > 0 && cert.DNSNames[0] != "" {
		return cert.DNSNames[0], true
	}
	return "", false
}
