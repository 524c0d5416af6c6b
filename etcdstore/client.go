package etcdstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/snowfence/snowfence/lease"
)

// Defaults for the zero fields of ClientConfig.
const (
	DefaultEndpoint    = "http://127.0.0.1:2379"
	DefaultDialTimeout = 5 * time.Second
)

// ClientConfig says how to reach an etcd cluster. The zero value reaches a
// plaintext etcd on 127.0.0.1:2379 without authentication.
type ClientConfig struct {
	// Endpoints are the client URLs of the cluster's members
	// (https://host:2379 for TLS). Zero: DefaultEndpoint.
	Endpoints []string
	// TLS, if not nil, is used for every connection (see TLSConfig).
	TLS *tls.Config
	// Username and Password authenticate to a cluster with auth enabled;
	// empty means none.
	Username, Password string
	// DialTimeout bounds connecting and the first request Open makes, when
	// its context has no earlier deadline. Zero: 5 s.
	DialTimeout time.Duration
}

// reconnect is how the client dials a member again after losing it.
// gRPC's default backoff grows to 120 s (1 s × 1.6 per failed dial) and
// gives each dial 20 s: a holder cut off from etcd for half a minute
// waited up to 16 s more after the network came back before a dial
// reached it, refusing all the while. Dials now come at most a second
// apart and each is given 5 s (DefaultDialTimeout: a TLS handshake across
// regions fits), so the client is back within a few seconds of the
// network; a member that stays away costs one dial a second.
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: DefaultDialTimeout,
}

// Open connects to the cluster cc describes and checks that it answers
// (a member list, which every user may read). The caller owns the client
// and closes it after any Store using it.
func Open(ctx context.Context, cc ClientConfig) (*clientv3.Client, error) {
	eps := cc.Endpoints
	if len(eps) == 0 {
		eps = []string{DefaultEndpoint}
	}
	dial := cc.DialTimeout
	if dial <= 0 {
		dial = DefaultDialTimeout
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            eps,
		TLS:                  cc.TLS,
		Username:             cc.Username,
		Password:             cc.Password,
		DialTimeout:          dial,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		DialOptions:          []grpc.DialOption{grpc.WithConnectParams(reconnect)},
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: connect to etcd at %v: %w; check the endpoints, TLS files and credentials", eps, err)
	}
	pctx, cancel := context.WithTimeout(ctx, dial)
	defer cancel()
	if _, err := cli.MemberList(pctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcdstore: etcd at %v does not answer: %w; is it running and reachable, "+
			"and do the endpoints' scheme (http/https) and credentials match it?", eps, err)
	}
	return cli, nil
}

// Connect opens a client with Open and returns a Store that owns it: the
// Store's Close closes the client.
func Connect(ctx context.Context, cc ClientConfig, cfg Config) (*Store, error) {
	cli, err := Open(ctx, cc)
	if err != nil {
		return nil, err
	}
	s, err := New(cli, cfg)
	if err != nil {
		cli.Close()
		return nil, err
	}
	s.ownsClient = true
	return s, nil
}

// TLSConfig builds a client TLS configuration from PEM files: certFile and
// keyFile are the client's certificate and key (both or neither; needed
// when etcd requires client certificates), caFile the CA that signed etcd's
// server certificates (empty: the system's roots).
func TLSConfig(certFile, keyFile, caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case certFile != "" && keyFile != "":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: load client certificate %s and key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case certFile != "" || keyFile != "":
		return nil, fmt.Errorf("%w: etcd client certificate and key go together: got certificate %q, key %q", lease.ErrInvalid, certFile, keyFile)
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: read etcd CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcdstore: %s has no PEM certificate; give the CA certificate that signed etcd's server certificates", caFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
