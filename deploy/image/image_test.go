package image_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/x509"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/deploy/image"
)

// Building twice gives the same bytes: build.sh run again into another
// directory prints the same digest and writes a layout identical file for
// file. And what the digest depends on is what it should: the same binary
// packed with the same options gives one digest; another time of the
// source (SOURCE_DATE_EPOCH, to the second), another version or another
// binary gives another.
func TestBuildReproducible(t *testing.T) {
	dir, digest := builtImage(t)
	again := filepath.Join(tmpRoot, "again")
	digest2, err := buildScript(t, again)
	if err != nil {
		t.Fatal(err)
	}
	if digest2 != digest {
		t.Errorf("built twice: %s, then %s; want one digest", digest, digest2)
	}
	files := func(root string) map[string][]byte {
		out := map[string][]byte{}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(root, p)
			out[rel] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := files(dir), files(again)
	if len(a) != len(b) || len(a) != 5 { // oci-layout, index.json, 3 blobs
		t.Errorf("layouts of %d and %d files; want 5 each", len(a), len(b))
	}
	for name, content := range a {
		if !bytes.Equal(content, b[name]) {
			t.Errorf("%s differs between the two builds", name)
		}
	}
	t.Logf("digest %s, twice", digest)

	base := image.Options{Binary: []byte("\x7fELF not really"), Arch: "amd64", Created: time.Unix(1700000000, 0), Version: "v1"}
	digestOf := func(o image.Options) string {
		t.Helper()
		img, err := image.Build(o)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	want := digestOf(base)
	same := base
	same.Created = base.Created.Add(999 * time.Millisecond)
	if got := digestOf(same); got != want {
		t.Errorf("the same source time to the second: %s; want %s", got, want)
	}
	for what, o := range map[string]image.Options{
		"a second later":  {Binary: base.Binary, Arch: base.Arch, Created: base.Created.Add(time.Second), Version: base.Version},
		"another version": {Binary: base.Binary, Arch: base.Arch, Created: base.Created, Version: "v2"},
		"another binary":  {Binary: []byte("\x7fELF not really either"), Arch: base.Arch, Created: base.Created, Version: base.Version},
	} {
		if got := digestOf(o); got == want {
			t.Errorf("%s: the same digest %s; the change is not in the image", what, got)
		}
	}
}

// The layer holds exactly the image's files, sorted, each dated the
// source's time with a fixed owner and mode, in plain ustar headers (no
// user or group names, no extended headers), gzipped without a name or a
// time; its digest and diff ID are the sha256 of its compressed and
// uncompressed bytes. The binary is static, built with -trimpath and the
// version given; the CA bundle parses; the user in /etc/passwd is the
// image's.
func TestImageLayer(t *testing.T) {
	dir, _ := builtImage(t)
	l := readLayout(t, dir)
	if len(l.manifest.Layers) != 1 || l.manifest.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Fatalf("layers %+v; want one OCI gzip layer", l.manifest.Layers)
	}
	compressed, err := os.ReadFile(l.blobPath(t, l.manifest.Layers[0]))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(compressed); "sha256:"+hex.EncodeToString(sum[:]) != l.manifest.Layers[0].Digest {
		t.Errorf("layer digest %s is not the sha256 of its bytes", l.manifest.Layers[0].Digest)
	}
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() || zr.Comment != "" {
		t.Errorf("gzip header: name %q, time %s, comment %q; want none", zr.Name, zr.ModTime, zr.Comment)
	}
	uncompressed, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var cfg configFile
	l.decode(t, l.blobPath(t, l.manifest.Config), &cfg)
	if sum := sha256.Sum256(uncompressed); len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("diff_ids %v; want the sha256 of the uncompressed layer", cfg.RootFS.DiffIDs)
	}

	type entry struct {
		name     string
		typ      byte
		mode     int64
		uid, gid int
	}
	want := []entry{
		{"etc/", tar.TypeDir, 0o755, 0, 0},
		{"etc/group", tar.TypeReg, 0o644, 0, 0},
		{"etc/passwd", tar.TypeReg, 0o644, 0, 0},
		{"etc/ssl/", tar.TypeDir, 0o755, 0, 0},
		{"etc/ssl/certs/", tar.TypeDir, 0o755, 0, 0},
		{"etc/ssl/certs/ca-certificates.crt", tar.TypeReg, 0o644, 0, 0},
		{"usr/", tar.TypeDir, 0o755, 0, 0},
		{"usr/local/", tar.TypeDir, 0o755, 0, 0},
		{"usr/local/bin/", tar.TypeDir, 0o755, 0, 0},
		{"usr/local/bin/snowfence", tar.TypeReg, 0o755, 0, 0},
		{"var/", tar.TypeDir, 0o755, 0, 0},
		{"var/lib/", tar.TypeDir, 0o755, 0, 0},
		{"var/lib/snowfence/", tar.TypeDir, 0o700, image.UID, image.GID},
	}
	epoch, _ := strconv.ParseInt(testEpoch, 10, 64)
	var got []entry
	content := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(uncompressed))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entry{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid})
		if !h.ModTime.Equal(time.Unix(epoch, 0)) {
			t.Errorf("%s: modified %s; want SOURCE_DATE_EPOCH %s", h.Name, h.ModTime.UTC(), time.Unix(epoch, 0).UTC())
		}
		if h.Uname != "" || h.Gname != "" || len(h.PAXRecords) > 0 || h.Format != tar.FormatUSTAR {
			t.Errorf("%s: uname %q gname %q, PAX %v, format %v; want plain ustar without names", h.Name, h.Uname, h.Gname, h.PAXRecords, h.Format)
		}
		if content[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("layer entries:\n%v\nwant:\n%v", got, want)
	}

	bin := content["usr/local/bin/snowfence"]
	ef, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("the binary is not ELF: %v", err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has an ELF interpreter: it is dynamically linked (CGO_ENABLED=0 missing?)")
		}
	}
	if libs, _ := ef.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
	repo, _ := filepath.Abs("../..")
	if bytes.Contains(bin, []byte(repo)) {
		t.Errorf("the binary holds the build's path %s: -trimpath missing, and another checkout would build other bytes", repo)
	}
	binPath := filepath.Join(t.TempDir(), "snowfence")
	if err := os.WriteFile(binPath, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "version", "-m", binPath).Output(); err != nil {
		t.Errorf("go version -m: %v", err)
	} else {
		for _, setting := range []string{"-trimpath=true", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"} {
			if !strings.Contains(string(out), setting) {
				t.Errorf("go version -m does not show %s:\n%s", setting, out)
			}
		}
		if strings.Contains(string(out), "vcs.revision") {
			t.Errorf("the binary is stamped with its VCS state: another checkout of the same source would build other bytes\n%s", out)
		}
	}
	if out, err := exec.Command("go", "tool", "buildid", binPath).Output(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("go tool buildid: %q, %v; want an empty build ID (-ldflags -buildid=)", out, err)
	}
	if out, err := exec.Command(binPath, "version").Output(); err != nil || !strings.HasPrefix(string(out), "snowfence "+testVersion+" ") {
		t.Errorf("snowfence version: %q, %v; want the version build.sh was given, %s", out, err, testVersion)
	}

	if passwd := string(content["etc/passwd"]); !strings.Contains(passwd, "\n"+image.UserName+":x:"+strconv.Itoa(image.UID)+":"+strconv.Itoa(image.GID)+":") {
		t.Errorf("/etc/passwd has no %s with uid %d:\n%s", image.UserName, image.UID, passwd)
	}
	rest, n := content["etc/ssl/certs/ca-certificates.crt"], 0
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			t.Errorf("CA bundle: certificate %d: %v", n, err)
		}
		n++
	}
	if n < 100 || len(bytes.TrimSpace(rest)) > 0 {
		t.Errorf("CA bundle: %d certificates and %d bytes that are none; want the NSS roots (well over 100), nothing else", n, len(rest))
	}
}

// configFile is what the tests read of the image's config.
type configFile struct {
	Created      string `json:"created"`
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User         string              `json:"User"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Env          []string            `json:"Env"`
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		Volumes      map[string]struct{} `json:"Volumes"`
		WorkingDir   string              `json:"WorkingDir"`
		Labels       map[string]string   `json:"Labels"`
		StopSignal   string              `json:"StopSignal"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	History []struct {
		Created string `json:"created"`
	} `json:"history"`
}

// The config says how the image runs: as the non-root user by number,
// serve as the entrypoint, both listeners on every interface, the data
// directory a volume, SIGTERM to stop, the source's time throughout; the
// index names it by its version, for its platform.
func TestImageConfig(t *testing.T) {
	dir, digest := builtImage(t)
	l := readLayout(t, dir)
	m := l.index.Manifests[0]
	if m.Digest != digest || m.MediaType != "application/vnd.oci.image.manifest.v1+json" ||
		m.Annotations["org.opencontainers.image.ref.name"] != testVersion || m.Platform == nil || m.Platform.OS != "linux" || m.Platform.Architecture != "amd64" {
		t.Errorf("index.json's manifest %+v; want %s, an OCI manifest named %s, linux/amd64", m, digest, testVersion)
	}
	if l.manifest.Config.MediaType != "application/vnd.oci.image.config.v1+json" {
		t.Errorf("config media type %q", l.manifest.Config.MediaType)
	}
	var cfg configFile
	l.decode(t, l.blobPath(t, l.manifest.Config), &cfg)
	created := "2023-11-14T22:13:20Z"
	c := cfg.Config
	checks := []struct {
		what      string
		got, want any
	}{
		{"created", cfg.Created, created},
		{"history", len(cfg.History) == 1 && cfg.History[0].Created == created, true},
		{"platform", cfg.OS + "/" + cfg.Architecture, "linux/amd64"},
		{"user", c.User, "65532:65532"},
		{"entrypoint", c.Entrypoint, []string{"/usr/local/bin/snowfence", "serve"}},
		{"cmd", c.Cmd, []string(nil)},
		{"env", c.Env, []string{"PATH=/usr/local/bin", "SNOWFENCE_LISTEN=:8080", "SNOWFENCE_ADMIN_LISTEN=:9090",
			"SNOWFENCE_DATA_DIR=/var/lib/snowfence/etcd", "SNOWFENCE_LOG_FORMAT=json"}},
		{"exposed ports", c.ExposedPorts, map[string]struct{}{"8080/tcp": {}, "9090/tcp": {}}},
		{"volumes", c.Volumes, map[string]struct{}{"/var/lib/snowfence": {}}},
		{"working directory", c.WorkingDir, "/var/lib/snowfence"},
		{"stop signal", c.StopSignal, "SIGTERM"},
		{"version label", c.Labels["org.opencontainers.image.version"], testVersion},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s: %v; want %v", ch.what, ch.got, ch.want)
		}
	}
	raw, _ := json.Marshal(cfg)
	t.Logf("config: %s", raw)
}
