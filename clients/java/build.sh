#!/usr/bin/env bash
# Builds the Java client without Maven, with the JDK alone (javac, jar):
#   target/build/snowfence-client.jar   the library (what `mvn package` ships)
#   target/build/tools/                 the conformance runner and the benchmark
#                                       (src/conformance, src/bench; not in the jar)
# A second run with no source changed does nothing. Installs the JDK with
# apt-get when javac is missing; exits 3 (a line on stderr) if it cannot.
# The unit tests run under Maven: ./mvn-offline test (see README.md).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$here/target/build

# apt_install PKG...: installs Debian packages quietly, updating the package
# lists first only if the install fails without.
apt_install() {
	command -v apt-get >/dev/null 2>&1 || return 1
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2 && return 0
	DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2
}

if ! command -v javac >/dev/null 2>&1 || ! command -v jar >/dev/null 2>&1; then
	echo "build.sh: javac not found; installing openjdk-17-jdk-headless with apt-get" >&2
	if ! apt_install openjdk-17-jdk-headless; then
		echo "build.sh: javac (a JDK 17 or later) is missing and could not be installed with apt-get; install one" >&2
		exit 3
	fi
fi
release=$(javac -version 2>&1 | sed -n 's/^javac \([0-9]*\).*/\1/p')
if [ -z "$release" ] || [ "$release" -lt 17 ]; then
	echo "build.sh: javac ${release:-?} found; the client needs JDK 17 or later" >&2
	exit 3
fi

stamp=$out/.stamp
if [ -f "$stamp" ] && [ -z "$(find "$here/src/main" "$here/src/conformance" "$here/src/bench" "$0" -newer "$stamp" -print -quit)" ]; then
	exit 0
fi
rm -rf "$out"
mkdir -p "$out/classes" "$out/tools"
find "$here/src/main/java" -name '*.java' >"$out/main.txt"
javac --release 17 -Xlint:all -Werror -encoding UTF-8 -d "$out/classes" @"$out/main.txt"
printf 'Automatic-Module-Name: io.github.snowfence.client\n' >"$out/manifest.txt"
jar --create --file "$out/snowfence-client.jar" --manifest "$out/manifest.txt" -C "$out/classes" .
find "$here/src/conformance/java" "$here/src/bench/java" -name '*.java' >"$out/tools.txt"
javac --release 17 -Xlint:all -Werror -encoding UTF-8 -cp "$out/snowfence-client.jar" -d "$out/tools" @"$out/tools.txt"
touch "$stamp"
