package service

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease/registry"
	"github.com/snowfence/snowfence/node"
)

// holderRegion is the region serve starts in, as its own store's region
// registry resolves --region.
type holderRegion struct {
	// region is the registry's entry (only Number set when no registry is
	// written and --region is a number).
	region registry.Region
	// registry is the registry read; the zero Registry if none is written.
	registry registry.Registry
	// open opens the store for the node: the Opener given, or, when the
	// embedded etcd was started to read the registry, one that reuses it.
	open node.Opener
	// release stops what was started to read the registry if the node never
	// took it over (open not called); safe to call always.
	release func()
}

// resolveHolderRegion reads the region registry from the holder's own
// store before the node starts (embedded is the etcd store's configuration
// should open start the embedded etcd) — opened by open at region 0, since the
// registry is one per store beside every region's leases — and resolves
// text (--region, a name or a number) into the region's number with
// registry.Registry.Resolve: a name is known only there, and an unknown or
// retired region is refused with the message Resolve gives, which names
// the command that fixes it. With no registry written a number is taken
// as it is.
//
// The rest of the registry's rules — the region's home store, the
// registry's schedule against the holder's and the store's record, and
// the region again by number — are the keeper's (lease.StartKeeper), which
// every holder passes, serve's included: the node refuses with its error.
//
// Nothing here calls another region's store: the store read is the one the
// holder leases from.
func resolveHolderRegion(ctx context.Context, open node.Opener, embedded etcdstore.Config, text string, log *slog.Logger) (_ holderRegion, err error) {
	o, err := open(ctx, 0, log)
	if err != nil {
		return holderRegion{}, err
	}
	hr := holderRegion{open: open, release: func() {}}
	if o.Embedded != nil {
		// Keep the embedded etcd for the node rather than stop and start
		// it again; close only the client used to read.
		srv := o.Embedded
		handed := false
		inner := node.OnEmbedded(srv, embedded)
		hr.open = func(ctx context.Context, region int, log *slog.Logger) (*node.Opened, error) {
			handed = true // the node has srv now: it stops it, also on an error
			return inner(ctx, region, log)
		}
		hr.release = func() {
			if !handed {
				handed = true
				srv.Close()
			}
		}
		defer func() {
			o.Store.Close()
			if err != nil {
				hr.release()
			}
		}()
	} else {
		defer closeOpened(o)
	}
	var reg registry.Registry
	if rr := o.Store.RegistryReader(); rr != nil {
		reg, err = rr.Registry(ctx)
	}
	if err != nil {
		return hr, fmt.Errorf("read the region registry from the lease store: %w", err)
	}
	hr.registry = reg
	if hr.region, err = reg.Resolve(text); err != nil {
		return hr, fmt.Errorf("--region %s: %w", text, err)
	}
	return hr, nil
}

// closeOpened closes what an Opener opened.
func closeOpened(o *node.Opened) error {
	if o.Close != nil {
		return o.Close()
	}
	return o.Store.Close()
}
