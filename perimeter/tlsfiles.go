package perimeter

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// loadKeyPair loads the server's certificate chain and key from the
// contents of certFile and keyFile (named in errors). It is strict
// where tls.X509KeyPair is lenient, so that a half-written file is an error
// rather than a shorter chain: every PEM block of the certificate file must
// be a CERTIFICATE that parses, nothing but space may follow the last, the
// key must match the leaf, and the leaf must be valid at now.
func loadKeyPair(certFile string, certPEM []byte, keyFile string, keyPEM []byte, now time.Time) (tls.Certificate, error) {
	if _, err := parseCerts(certPEM); err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", certFile, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s and %s: %w", certFile, keyFile, err)
	}
	leaf := pair.Leaf // set by X509KeyPair since Go 1.23
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return tls.Certificate{}, fmt.Errorf("%s: %w", certFile, err)
		}
		pair.Leaf = leaf
	}
	if now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		return tls.Certificate{}, fmt.Errorf("%s: the certificate is valid from %s to %s, not now (%s)", certFile,
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return pair, nil
}

// loadCAs loads a bundle of CA certificates from the contents b of path
// (named in errors), strictly (see parseCerts):
// x509.CertPool.AppendCertsFromPEM would silently drop a truncated last
// certificate, and with it every caller that CA signed.
func loadCAs(path string, b []byte) (*x509.CertPool, error) {
	certs, err := parseCerts(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// parseCerts parses a PEM file of one or more certificates: every block
// must be a CERTIFICATE that parses, and only space may surround them.
func parseCerts(b []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := b
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is %q, want CERTIFICATE", len(certs)+1, blk.Type)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("%d bytes after certificate %d are not a whole PEM block (a file still being written?)", len(bytes.TrimSpace(rest)), len(certs))
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return certs, nil
}
