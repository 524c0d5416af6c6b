#!/usr/bin/env bash
# kube-apiserver.sh build|path — the kube-apiserver (Kubernetes v1.37.2) that
# internal/testkit/k8stest runs for the Kubernetes lease store's tests.
#
#   build  builds it from the Go module proxy, unless it is already built:
#          cmd/kube-apiserver of k8s.io/kubernetes v1.37.2 as the tool of the
#          wrapper module internal/testkit/k8stest/apiserver (its go.mod and
#          complete go.sum are committed; the build runs -mod=readonly and
#          never tidies). A cold build downloads ~550 MB of modules (15 s)
#          and takes ~440 CPU-seconds (4 minutes on two idle cores;
#          scripts/test builds it beside the steps that time nothing, and
#          the race run waits for it). Prints the binary's path.
#   path   prints the binary's path (exit 1 if it is not built).
#
# The binary is kept at
#   ${SNOWFENCE_KUBE_APISERVER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/snowfence}/kube-apiserver-v1.37.2
# where k8stest looks for it; SNOWFENCE_KUBE_APISERVER, when set, names
# another binary for k8stest to run instead. Diagnostics go to stderr, the
# path alone to stdout.
set -euo pipefail

version=v1.37.2
minor=37
dir=${SNOWFENCE_KUBE_APISERVER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/snowfence}
bin=$dir/kube-apiserver-$version
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
module=$root/internal/testkit/k8stest/apiserver

say() { echo "kube-apiserver.sh: $*" >&2; }
die() { say "$*"; exit 1; }

build() {
	if [[ -x $bin ]]; then
		say "already built: $bin"
		echo "$bin"
		return
	fi
	command -v go >/dev/null || die "go not found on PATH"
	mkdir -p "$dir"
	local tmp=$bin.tmp.$$
	trap 'rm -f "$tmp"' EXIT
	say "building kube-apiserver $version from the Go module proxy into $bin (~450 CPU-seconds cold)"
	# A build cache, module cache and temporary directory of its own,
	# removed once the binary is built (the cache is 2.7 GB, for one binary
	# that is kept anyway), on a tmpfs when there is one with room for them:
	# scripts/test runs the build beside tests whose stores fsync, and 3 GB
	# of the build's writes queued on the same disk can hold those fsyncs
	# up past a renewal's timeout. -dwarf=false: the compiler writes no
	# debug information, which the linker would strip anyway (-w).
	local scratch=$dir/build-$version.$$
	if [[ -d /dev/shm ]] && (( $(df -Pk /dev/shm | awk 'NR==2 {print $4}') > 6 * 1024 * 1024 )); then
		scratch=/dev/shm/snowfence-kube-build.$$
	fi
	mkdir -p "$scratch/tmp"
	trap 'rm -f "$tmp"; rm -rf "$scratch"' EXIT
	(
		cd "$module"
		GOCACHE=$scratch/cache GOMODCACHE=$scratch/mod GOTMPDIR=$scratch/tmp GOWORK=off GOFLAGS="-mod=readonly -modcacherw" go build -trimpath \
			-gcflags=all=-dwarf=false \
			-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
			-o "$tmp" k8s.io/kubernetes/cmd/kube-apiserver
	) >&2
	"$tmp" --version >&2 || die "the built binary does not run"
	mv "$tmp" "$bin"
	rm -rf "$scratch"
	trap - EXIT
	say "built $bin"
	echo "$bin"
}

case "${1:-}" in
build) build ;;
path) [[ -x $bin ]] || die "not built: scripts/services/kube-apiserver.sh build"; echo "$bin" ;;
*) die "usage: $0 build|path" ;;
esac
