package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
)

// storeFlags are the options that say where the leases live; serve and
// leases share them.
type storeFlags struct {
	endpoints          string
	cert, key, ca      string
	username, password string
	prefix             string
	dataDir            string
	region             int
	dialTimeout        time.Duration
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoints, "etcd-endpoints", "", "comma-separated client URLs of an external etcd cluster (empty: the embedded etcd)")
	fs.StringVar(&f.cert, "etcd-cert", "", "client certificate (PEM) for etcd TLS")
	fs.StringVar(&f.key, "etcd-key", "", "client key (PEM) for etcd TLS")
	fs.StringVar(&f.ca, "etcd-ca", "", "CA certificate (PEM) that signed etcd's server certificates")
	fs.StringVar(&f.username, "etcd-username", "", "etcd user, if etcd has auth enabled")
	fs.StringVar(&f.password, "etcd-password", "", "etcd password")
	fs.StringVar(&f.prefix, "etcd-prefix", etcdstore.DefaultPrefix, "key prefix of the lease keys in etcd")
	fs.StringVar(&f.dataDir, "data-dir", etcdstore.DefaultEmbedDir, "data directory of the embedded etcd")
	fs.IntVar(&f.region, "region", 0, "region number (v2 layout: 0-7)")
	fs.DurationVar(&f.dialTimeout, "etcd-dial-timeout", 5*time.Second, "how long to wait for etcd to answer at start")
}

// clientConfig returns the external cluster's client configuration, with no
// endpoints when the embedded etcd is meant.
func (f *storeFlags) clientConfig() (etcdstore.ClientConfig, error) {
	cc := etcdstore.ClientConfig{Username: f.username, Password: f.password, DialTimeout: f.dialTimeout}
	for _, ep := range strings.Split(f.endpoints, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			cc.Endpoints = append(cc.Endpoints, ep)
		}
	}
	if f.cert != "" || f.key != "" || f.ca != "" {
		if (f.cert == "") != (f.key == "") {
			return cc, usagef("--etcd-cert and --etcd-key go together")
		}
		tlsCfg, err := etcdstore.TLSConfig(f.cert, f.key, f.ca)
		if err != nil {
			return cc, err
		}
		cc.TLS = tlsCfg
	}
	return cc, nil
}

func (f *storeFlags) storeConfig() etcdstore.Config {
	return etcdstore.Config{Prefix: f.prefix, Region: f.region}
}

// connect opens the lease store for an operator command: the external
// cluster, or the embedded etcd of a snowfence serve running on this
// machine (found through the client-url file in its data directory).
func (f *storeFlags) connect(ctx context.Context) (*etcdstore.Store, error) {
	cc, err := f.clientConfig()
	if err != nil {
		return nil, err
	}
	if len(cc.Endpoints) == 0 {
		url, err := etcdstore.ReadClientURL(f.dataDir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("no etcd to talk to: pass --etcd-endpoints, or run this next to a running \"snowfence serve\" (its embedded etcd records its address in %s)", f.dataDir)
			}
			return nil, err
		}
		cc.Endpoints = []string{url}
	}
	return etcdstore.Connect(ctx, cc, f.storeConfig())
}
