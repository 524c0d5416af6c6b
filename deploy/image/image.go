// Package image builds snowfence's container image from a static snowfence
// binary, with no base image to pull: one layer holding the binary, the
// user it runs as (/etc/passwd, /etc/group), the CA roots a holder needs to
// reach a store over public TLS (DynamoDB), and the data directory, which
// is the only place serve writes (the embedded etcd's data directory and
// its high-water file beside it). deploy/image/build.sh builds the binary
// and calls cmd/snowfence-image, which writes the image with this package
// as an OCI image layout (and, if asked, a docker-archive tarball).
//
// The same binary and Options give the same bytes, and so the same digest:
// the layer's entries are sorted, each with a fixed owner, mode and
// modification time (Options.Created, from SOURCE_DATE_EPOCH), no user or
// group names and no extended headers; the gzip stream carries no name or
// time; the config's and history's times are Options.Created. The layer,
// config, manifest and layout are written by
// github.com/google/go-containerregistry, which computes the digests, diff
// IDs, sizes and media types the OCI image specification asks for (and the
// docker-archive form), so that none of that is written by hand here.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// What the image is; the Kubernetes manifests and the tests read these.
const (
	// UID and GID are the user and group the image runs as: not root,
	// numeric (a runtime can check runAsNonRoot without /etc/passwd), and
	// the value distroless images use for "nonroot".
	UID = 65532
	GID = 65532
	// UserName is UID's name in the image's /etc/passwd.
	UserName = "snowfence"
	// Binary is where the snowfence binary is; the entrypoint runs it.
	Binary = "/usr/local/bin/snowfence"
	// DataDir is the image's one volume, owned by UID: the embedded etcd's
	// data directory (DataDir/etcd) and its high-water file
	// (DataDir/etcd.highwater) live there. With a shared store serve writes
	// nothing at all. Nothing else of the file system need be writable.
	DataDir = "/var/lib/snowfence"
	// ListenPort is the main listener's port (SNOWFENCE_LISTEN), the API.
	ListenPort = 8080
	// AdminPort is the admin listener's (SNOWFENCE_ADMIN_LISTEN): /healthz,
	// /readyz, /livez, /metrics and the status page.
	AdminPort = 9090
	// CAFile is the bundle of CA roots: where Go's crypto/x509 looks first
	// on Linux.
	CAFile = "/etc/ssl/certs/ca-certificates.crt"
	// StopSignal is the signal serve drains on.
	StopSignal = "SIGTERM"
)

// Entrypoint is the command the image runs; arguments given to the
// container are serve's flags.
func Entrypoint() []string { return []string{Binary, "serve"} }

// Env is the image's environment: serve's configuration for a container.
// Both listeners on every interface (serve's default is loopback), the
// embedded etcd's data directory in the volume, JSON logs. Every other flag
// of serve can be set with its own SNOWFENCE_* variable, or given as an
// argument (an argument wins over the variable).
func Env() []string {
	return []string{
		"PATH=/usr/local/bin",
		"SNOWFENCE_LISTEN=:" + strconv.Itoa(ListenPort),
		"SNOWFENCE_ADMIN_LISTEN=:" + strconv.Itoa(AdminPort),
		"SNOWFENCE_DATA_DIR=" + DataDir + "/etcd",
		"SNOWFENCE_LOG_FORMAT=json",
	}
}

// Options are what an image is built from.
type Options struct {
	// Binary is the snowfence binary: static (CGO_ENABLED=0), for the
	// image's Arch.
	Binary []byte
	// Arch is the GOARCH the binary is for: the image's architecture.
	Arch string
	// Created is the time of every file and of the image: the source's
	// (SOURCE_DATE_EPOCH), never the time of the build.
	Created time.Time
	// Version is the image's org.opencontainers.image.version label.
	Version string
}

// file is one entry of the layer.
type file struct {
	name     string // no leading slash; a directory ends with one
	mode     int64
	uid, gid int
	data     []byte
}

// files lists the layer's entries, directories first at each level by
// virtue of sorting by name.
func files(o Options) ([]file, error) {
	ca, err := caBundle()
	if err != nil {
		return nil, err
	}
	dirs := []string{"etc/", "etc/ssl/", "etc/ssl/certs/", "usr/", "usr/local/", "usr/local/bin/", "var/", "var/lib/"}
	fs := []file{
		{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:snowfence:%s:/sbin/nologin\n", UserName, UID, GID, DataDir)},
		{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\n%s:x:%d:\n", UserName, GID)},
		{name: strings.TrimPrefix(CAFile, "/"), mode: 0o644, data: ca},
		{name: strings.TrimPrefix(Binary, "/"), mode: 0o755, data: o.Binary},
		// The volume: the user's alone.
		{name: strings.TrimPrefix(DataDir, "/") + "/", mode: 0o700, uid: UID, gid: GID},
	}
	for _, d := range dirs {
		fs = append(fs, file{name: d, mode: 0o755})
	}
	slices.SortFunc(fs, func(a, b file) int { return strings.Compare(a.name, b.name) })
	return fs, nil
}

// caBundle is the NSS roots of golang.org/x/crypto/x509roots/fallback (the
// version deploy/go.sum pins) as PEM, in the bundle's order. Roots that
// carry a constraint PEM cannot express (NSS distrusts what they issue
// after a date) are left out rather than trusted without it.
func caBundle() ([]byte, error) {
	var b bytes.Buffer
	n := 0
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("image: the CA bundle of golang.org/x/crypto/x509roots/fallback has no unconstrained root")
	}
	return b.Bytes(), nil
}

// Layer returns the layer's tar stream, uncompressed.
func Layer(o Options) ([]byte, error) {
	fs, err := files(o)
	if err != nil {
		return nil, err
	}
	mtime := o.Created.UTC().Truncate(time.Second)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range fs {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: mtime, Format: tar.FormatUSTAR}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("image: %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Build returns the image: an OCI manifest and config over the one layer.
func Build(o Options) (v1.Image, error) {
	if len(o.Binary) == 0 || o.Arch == "" || o.Created.IsZero() || o.Version == "" {
		return nil, fmt.Errorf("image: Binary, Arch, Created and Version are all required")
	}
	tarBytes, err := Layer(o)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(tarBytes)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.Created.UTC().Truncate(time.Second)}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: created, CreatedBy: "deploy/image/build.sh: snowfence " + o.Version}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = o.Arch, "linux", created
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint:   Entrypoint(),
		Env:          Env(),
		WorkingDir:   DataDir,
		ExposedPorts: map[string]struct{}{fmt.Sprintf("%d/tcp", ListenPort): {}, fmt.Sprintf("%d/tcp", AdminPort): {}},
		Volumes:      map[string]struct{}{DataDir: {}},
		StopSignal:   StopSignal,
		Labels: map[string]string{
			"org.opencontainers.image.title":       "snowfence",
			"org.opencontainers.image.description": "snowfence serve: Snowflake-style 64-bit IDs from fenced machine-number leases",
			"org.opencontainers.image.version":     o.Version,
			"org.opencontainers.image.created":     created.Format(time.RFC3339),
		},
	}
	return mutate.ConfigFile(img, cf)
}
