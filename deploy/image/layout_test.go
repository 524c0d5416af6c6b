package image_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The image the tests look at: built once by deploy/image/build.sh, as an
// operator builds it, into a directory of the test binary's own.
const (
	testEpoch   = "1700000000" // 2023-11-14T22:13:20Z
	testVersion = "test"
)

var (
	tmpRoot string
	built   struct {
		once   sync.Once
		dir    string
		digest string
		err    error
	}
)

func TestMain(m *testing.M) {
	var err error
	if tmpRoot, err = os.MkdirTemp("", "snowfence-image-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmpRoot)
	os.Exit(code)
}

// buildScript runs deploy/image/build.sh into dir with the test's epoch and
// version and env added, and returns the digest it printed.
func buildScript(t *testing.T, dir string, env ...string) (string, error) {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	cmd := exec.Command(filepath.Join(filepath.Dir(self), "build.sh"), dir)
	cmd.Env = append(os.Environ(), append([]string{"SOURCE_DATE_EPOCH=" + testEpoch, "VERSION=" + testVersion}, env...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build.sh: %v\n%s", err, stderr.String())
	}
	digest := strings.TrimSpace(string(out))
	if !strings.HasPrefix(digest, "sha256:") || len(digest) != len("sha256:")+64 {
		return "", fmt.Errorf("build.sh printed %q; want the manifest's sha256 digest", out)
	}
	return digest, nil
}

// builtImage returns the layout build.sh wrote once (with a docker-archive
// beside it, image.tar) and the digest it printed.
func builtImage(t *testing.T) (dir, digest string) {
	t.Helper()
	built.once.Do(func() {
		built.dir = filepath.Join(tmpRoot, "layout")
		built.digest, built.err = buildScript(t, built.dir, "DOCKER_ARCHIVE="+filepath.Join(tmpRoot, "image.tar"))
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir, built.digest
}

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	} `json:"platform"`
}

// layout is what the tests read of an OCI image layout, straight from its
// files (not through the library that wrote it).
type layout struct {
	dir      string
	index    struct{ Manifests []descriptor }
	manifest struct {
		MediaType string       `json:"mediaType"`
		Config    descriptor   `json:"config"`
		Layers    []descriptor `json:"layers"`
	}
}

func readLayout(t *testing.T, dir string) *layout {
	t.Helper()
	l := &layout{dir: dir}
	var marker struct {
		Version string `json:"imageLayoutVersion"`
	}
	l.decode(t, filepath.Join(dir, "oci-layout"), &marker)
	if marker.Version != "1.0.0" {
		t.Fatalf("oci-layout: imageLayoutVersion %q; want 1.0.0", marker.Version)
	}
	l.decode(t, filepath.Join(dir, "index.json"), &l.index)
	if len(l.index.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests; want 1", len(l.index.Manifests))
	}
	l.decode(t, l.blobPath(t, l.index.Manifests[0]), &l.manifest)
	return l
}

func (l *layout) decode(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// blobPath is d's blob, checked against d's size.
func (l *layout) blobPath(t *testing.T, d descriptor) string {
	t.Helper()
	algo, hex, _ := strings.Cut(d.Digest, ":")
	p := filepath.Join(l.dir, "blobs", algo, hex)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatalf("blob %s: %v", d.Digest, err)
	}
	if st.Size() != d.Size {
		t.Fatalf("blob %s: %d bytes; its descriptor says %d", d.Digest, st.Size(), d.Size)
	}
	return p
}
