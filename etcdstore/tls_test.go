package etcdstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/lease"
)

// An etcd that serves clients only over TLS with client-certificate auth:
// the files TLSConfig reads (what --etcd-ca/--etcd-cert/--etcd-key pass)
// reach it, and a client without a certificate does not.
func TestTLSCluster(t *testing.T) {
	ep, files := etcdtest.StartTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tlsCfg, err := etcdstore.TLSConfig(files.ClientCert, files.ClientKey, files.CA)
	if err != nil {
		t.Fatal(err)
	}
	s, err := etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: []string{ep}, TLS: tlsCfg}, etcdstore.Config{Prefix: "/tls"})
	if err != nil {
		t.Fatalf("connect over TLS with a client certificate: %v", err)
	}
	defer s.Close()
	l, err := s.Claim(ctx, lease.ClaimRequest{Holder: "tls-holder", Range: lease.Range{Lo: 3, Hi: 3}, NowMs: time.Now().UnixMilli(), LeaseFor: 10 * time.Second, MaxAhead: time.Second})
	if err != nil {
		t.Fatalf("claim over TLS: %v", err)
	}
	if _, err := s.Extend(ctx, l, time.Now().Add(10*time.Second).UnixMilli(), 10*time.Second); err != nil {
		t.Fatalf("extend over TLS: %v", err)
	}
	if rec, err := s.Get(ctx, 3); err != nil || rec.Holder != "tls-holder" {
		t.Fatalf("get over TLS: %+v, %v", rec, err)
	}

	noCert, err := etcdstore.TLSConfig("", "", files.CA)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(ctx, 3*time.Second)
	defer cancel2()
	if _, err := etcdstore.Open(short, etcdstore.ClientConfig{Endpoints: []string{ep}, TLS: noCert, DialTimeout: 2 * time.Second}); err == nil {
		t.Fatal("a client without a certificate reached an etcd that requires one")
	}
	if _, err := etcdstore.Open(short, etcdstore.ClientConfig{Endpoints: []string{ep}, DialTimeout: 2 * time.Second}); err == nil {
		t.Fatal("a plaintext client reached a TLS-only etcd")
	}
}
