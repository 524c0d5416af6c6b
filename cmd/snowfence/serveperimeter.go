package main

import (
	"flag"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfence/snowfence/perimeter"
)

// perimeterFlags are serve's mutual-TLS and quota options (package
// perimeter): with none set, the main listener is plain HTTP and every
// caller is the same anonymous one, without a quota.
type perimeterFlags struct {
	tlsCert, tlsKey, clientCA string
	callers                   string
	reloadEvery               time.Duration
}

func (f *perimeterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.tlsCert, "tls-cert", "", "server certificate chain (PEM) for mutual TLS on --listen; with --tls-key and --client-ca; reloaded when the file changes")
	fs.StringVar(&f.tlsKey, "tls-key", "", "private key (PEM) of --tls-cert; reloaded with it")
	fs.StringVar(&f.clientCA, "client-ca", "", "CA bundle (PEM) that signs callers' certificates: callers must present one, named by its URI SAN (a SPIFFE ID) or else its DNS SAN; reloaded when the file changes")
	fs.StringVar(&f.callers, "callers", "", `callers file (JSON): who may connect and each caller's quota in IDs per second, e.g. {"default": "deny", "callers": {"spiffe://corp/orders": {"rate": 50000, "burst": 10000}}}; reloaded when it changes; without mutual TLS every request is one anonymous caller under "default"`)
	fs.DurationVar(&f.reloadEvery, "reload-every", perimeter.DefaultPollInterval, "how often the TLS and callers files are read and compared with the last read (only regular files, each up to a size cap; a bad file keeps the last good configuration, is logged once and shown by snowfence_perimeter_reload_failing)")
}

// check refuses what perimeter.New cannot tell from a zero value.
func (f *perimeterFlags) check() error {
	if f.reloadEvery <= 0 {
		return usagef("--reload-every %s: use a positive interval", f.reloadEvery)
	}
	return nil
}

// config is the perimeter these flags describe, its metrics on reg.
func (f *perimeterFlags) config(reg prometheus.Registerer, log *slog.Logger) perimeter.Config {
	return perimeter.Config{CertFile: f.tlsCert, KeyFile: f.tlsKey, ClientCAFile: f.clientCA, CallersFile: f.callers,
		PollInterval: f.reloadEvery, Registerer: reg, Logger: log}
}
