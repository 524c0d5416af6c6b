package main

import (
	"errors"
	"flag"
	"log/slog"

	"github.com/snowfence/snowfence/publicid"
	"github.com/snowfence/snowfence/server"
	idservice "github.com/snowfence/snowfence/service"
)

// publicIDFlags are serve's public-ID options (package publicid): with
// --public-id-keys the service seals and opens public IDs.
type publicIDFlags struct {
	keys           string
	openWithoutTLS bool
}

func (f *publicIDFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.keys, "public-id-keys", "", `keyset file (JSON) of POST /v1/public-ids:mint, POST /v1/public-ids and GET /v1/public-ids/{pid}: {"keys": {"2": {"status": "primary", "key": "<32 hex digits>"}, "1": {"status": "decrypt-only", "key": "…"}}}; read once at start (restart to rotate); empty: the three routes answer 501`)
	fs.BoolVar(&f.openWithoutTLS, "public-id-open-without-tls", false, `let every caller open sealed public IDs and seal IDs of its choosing (POST /v1/public-ids), for a listener without mutual TLS that only trusted callers reach; otherwise grant "open_public_ids": true and "seal_public_ids": true to callers in the --callers file (on plain HTTP, in its "default"); every caller may mint sealed IDs (POST /v1/public-ids:mint) either way`)
}

// publicIDs is what the flags give the server: the keyset (nil without
// --public-id-keys) and who may open.
type publicIDs struct {
	keys           *publicid.Keyset
	openWithoutTLS bool
}

// load checks the flags against the perimeter's and reads the keyset,
// warning when the file is readable by others.
func (f *publicIDFlags) load(pf *perimeterFlags, log *slog.Logger) (publicIDs, error) {
	if f.openWithoutTLS && f.keys == "" {
		return publicIDs{}, usagef("--public-id-open-without-tls has no effect without --public-id-keys")
	}
	if f.openWithoutTLS && pf.tlsCert != "" {
		return publicIDs{}, usagef(`--public-id-open-without-tls is for a listener without mutual TLS; with --tls-cert, grant "open_public_ids": true and "seal_public_ids": true to callers in the --callers file`)
	}
	if f.keys == "" {
		return publicIDs{}, nil
	}
	ks, err := publicid.ReadKeyset(f.keys)
	if err != nil {
		return publicIDs{}, err
	}
	if err := publicid.CheckKeysetFileMode(f.keys); err != nil {
		if !errors.Is(err, publicid.ErrKeysetFileMode) {
			return publicIDs{}, err
		}
		log.Warn("the public-ID keyset file is readable by others", "error", err.Error())
	}
	log.Info("public IDs: keyset loaded", "file", f.keys, "primary", ks.Primary(), "versions", ks)
	return publicIDs{keys: ks, openWithoutTLS: f.openWithoutTLS}, nil
}

// configure sets the service's public-ID fields: the keyset, and as
// openers and sealers every caller (--public-id-open-without-tls) or, left
// nil, the perimeter's callers file.
func (p publicIDs) configure(sc *idservice.Config) {
	if p.keys == nil {
		return
	}
	sc.PublicIDKeys = p.keys
	if p.openWithoutTLS {
		sc.PublicIDOpeners, sc.PublicIDSealers = server.AnyCallerOpens{}, server.AnyCallerOpens{}
	}
}
