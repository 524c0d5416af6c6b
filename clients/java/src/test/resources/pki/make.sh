#!/usr/bin/env bash
# Makes the test PKI of the Java client's TLS tests (run once; the files are
# committed): a CA, a server certificate for 127.0.0.1 and localhost, a
# client certificate, each key ECDSA P-256; the client key also in SEC1
# form. Valid for 100 years. Test-only keys: they protect nothing.
set -euo pipefail
cd "$(dirname "$0")"
days=36500
openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out ca-key.pem
openssl req -x509 -new -key ca-key.pem -sha256 -days $days -subj "/CN=snowfence java test CA" -out ca.pem \
	-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
leaf() { # name CN extendedKeyUsage [SAN]
	openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out "$1-key.pem"
	openssl req -new -key "$1-key.pem" -subj "/CN=$2" -out "$1.csr"
	printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=%s\n%s' "$3" "${4:-}" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days $days -sha256 -extfile "$1.ext" -out "$1.pem"
	rm -f "$1.csr" "$1.ext"
}
leaf server "snowfence java test server" serverAuth "subjectAltName=IP:127.0.0.1,DNS:localhost"
leaf client "snowfence java test client" clientAuth
openssl ec -in client-key.pem -out client-key-sec1.pem
rm -f ca.srl ca-key.pem
