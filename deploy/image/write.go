package image

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// WriteLayout writes img as an OCI image layout in dir, which must not
// exist yet: oci-layout, index.json (one manifest, named tag by its
// org.opencontainers.image.ref.name annotation, with its platform) and the
// blobs. Tools read it as oci:DIR:TAG (skopeo, podman, umoci).
func WriteLayout(dir string, img v1.Image, tag string) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("image: %s exists; give a new directory (a layout is written whole, never added to)", dir)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img,
		layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag}),
		layout.WithPlatform(v1.Platform{OS: cf.OS, Architecture: cf.Architecture})); err != nil {
		return err
	}
	// Blobs are content, readable by anyone who may read the layout (some
	// are written 0600, through a temporary file).
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chmod(path, 0o644)
	})
}

// WriteDockerArchive writes img as a docker-archive tarball (docker load,
// podman load) named ref, e.g. "snowfence:1.2.0".
func WriteDockerArchive(path string, img v1.Image, ref string) error {
	tag, err := name.NewTag(ref, name.WithDefaultRegistry(""))
	if err != nil {
		return fmt.Errorf("image: %q: %w", ref, err)
	}
	return tarball.WriteToFile(path, tag, img)
}
