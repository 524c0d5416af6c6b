#!/usr/bin/env bash
# Builds snowfence's container image with no base image to pull: a static
# snowfence binary in one layer (package deploy/image says what else), as an
# OCI image layout, and with DOCKER_ARCHIVE=path a docker-archive tarball too.
# Prints the image's manifest digest, the same for the same source.
#
#   deploy/image/build.sh OUT_DIR
#
#   skopeo inspect oci:OUT_DIR:VERSION         # look at it
#   skopeo copy oci:OUT_DIR:VERSION docker://registry.example/snowfence:VERSION
#   podman load -i snowfence.tar               # with DOCKER_ARCHIVE=snowfence.tar
#
# Reproducible: the binary is static (CGO_ENABLED=0), built with -trimpath,
# without VCS stamping and with an empty build ID; every file and the image
# are dated SOURCE_DATE_EPOCH (default: the last commit's time), the layer's
# entries are sorted with a fixed owner and mode. The same source, Go
# toolchain (go.mod's) and module versions (go.sum, deploy/go.sum) give
# the same bytes. Environment: VERSION (default: git describe, else devel),
# SOURCE_DATE_EPOCH, GOARCH (default amd64), DOCKER_ARCHIVE.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: deploy/image/build.sh OUT_DIR (an OCI image layout, written anew)}
case $out in /*) ;; *) out=$PWD/$out ;; esac
archive=${DOCKER_ARCHIVE:-}
if [ -n "$archive" ]; then case $archive in /*) ;; *) archive=$PWD/$archive ;; esac; fi
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$root" log -1 --format=%ct 2>/dev/null) ||
    { echo "build.sh: not a git checkout: set SOURCE_DATE_EPOCH (Unix seconds of the source)" >&2; exit 1; }
fi
version=${VERSION:-$(git -C "$root" describe --tags --always --dirty 2>/dev/null || echo devel)}
arch=${GOARCH:-amd64}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$root" && CGO_ENABLED=0 GOOS=linux GOARCH=$arch GOFLAGS=-buildvcs=false \
  go build -trimpath -ldflags "-s -w -buildid= -X main.version=$version" -o "$work/snowfence" ./cmd/snowfence)
# The image writer runs on this machine, whatever GOARCH the image is for.
(cd "$root/deploy" && GOARCH= GOFLAGS=-buildvcs=false go build -trimpath -o "$work/snowfence-image" ./cmd/snowfence-image)
"$work/snowfence-image" -binary "$work/snowfence" -arch "$arch" -epoch "$SOURCE_DATE_EPOCH" -version "$version" \
  -out "$out" ${archive:+-docker-archive "$archive"}
