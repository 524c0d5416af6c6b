// Command snowfence-image writes snowfence's container image (package
// image) from a static snowfence binary: an OCI image layout, and with
// -docker-archive a docker-archive tarball too. It prints the image's
// manifest digest. deploy/image/build.sh builds the binary and runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/snowfence/snowfence/deploy/image"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "snowfence-image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("snowfence-image", flag.ContinueOnError)
	binary := fs.String("binary", "", "the static snowfence binary (CGO_ENABLED=0) for -arch")
	arch := fs.String("arch", "amd64", "the GOARCH the binary was built for")
	epoch := fs.String("epoch", os.Getenv("SOURCE_DATE_EPOCH"), "the time of every file and of the image, in Unix seconds (default $SOURCE_DATE_EPOCH): the source's, so that the same source gives the same digest")
	version := fs.String("version", "devel", "the image's version: its tag and org.opencontainers.image.version")
	out := fs.String("out", "", "the OCI image layout to write (a directory that does not exist yet)")
	archive := fs.String("docker-archive", "", "also write a docker-archive tarball here (docker load, podman load)")
	repo := fs.String("repository", "snowfence", "the docker-archive's repository name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *binary == "" || *out == "" || *epoch == "" {
		return fmt.Errorf("-binary, -out and -epoch (or SOURCE_DATE_EPOCH) are required")
	}
	secs, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil || secs <= 0 {
		return fmt.Errorf("-epoch %q: want Unix seconds, such as git log -1 --format=%%ct gives", *epoch)
	}
	bin, err := os.ReadFile(*binary)
	if err != nil {
		return err
	}
	img, err := image.Build(image.Options{Binary: bin, Arch: *arch, Created: time.Unix(secs, 0), Version: *version})
	if err != nil {
		return err
	}
	if err := image.WriteLayout(*out, img, *version); err != nil {
		return err
	}
	if *archive != "" {
		if err := image.WriteDockerArchive(*archive, img, *repo+":"+*version); err != nil {
			return err
		}
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Println(digest)
	return nil
}
