// Mutual TLS against a Node https server that requires a client
// certificate, with a throwaway PKI made by openssl.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, TransportError, UnavailableError } from "../src/index.js";
import { countOf, writeBatch } from "./helpers.js";

function haveOpenssl(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM. */
function pki(dir: string): Record<string, Buffer> {
  const run = (...args: string[]): void => void execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  run("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=snowfence test CA");
  for (const [name, ext] of [
    ["server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"],
    ["client", "extendedKeyUsage=clientAuth\n"],
  ] as const) {
    writeFileSync(join(dir, `${name}.ext`), ext);
    run("req", ...ec, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
    run("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${name}.pem`, "-days", "1", "-extfile", `${name}.ext`);
  }
  const out: Record<string, Buffer> = {};
  for (const f of ["ca.pem", "server.pem", "server.key", "client.pem", "client.key"]) out[f] = readFileSync(join(dir, f));
  return out;
}

// Under CI=true a missing openssl fails the test rather than skipping it.
const skip = !haveOpenssl() && process.env.CI !== "true" ? "openssl is not installed" : false;

test("mutual TLS: with the CA and a client certificate the client issues; without the certificate it is refused", { skip }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "snowfence-js-tls-"));
  try {
    const p = pki(dir);
    const next = { v: 0n };
    const server = https.createServer(
      { key: p["server.key"], cert: p["server.pem"], ca: p["ca.pem"], requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        req.resume();
        writeBatch(res, next, countOf(req));
      },
    );
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const good = new Client({ endpoints: [url], tls: { ca: p["ca.pem"], cert: p["client.pem"], key: p["client.key"] } });
      try {
        assert.equal(await good.next(), 1n);
        assert.equal((await good.nextN(100)).length, 100);
      } finally {
        await good.close();
      }
      const noCert = new Client({ endpoints: [url], tls: { ca: p["ca.pem"] }, maxAttempts: 2, baseBackoffMs: 1, maxBackoffMs: 1 });
      try {
        const err = await noCert.next().catch((e: unknown) => e);
        assert.ok(err instanceof UnavailableError && err.last instanceof TransportError, String(err));
        assert.equal(noCert.stats().received, 0);
      } finally {
        await noCert.close();
      }
      const noCA = new Client({ endpoints: [url], tls: { cert: p["client.pem"], key: p["client.key"] }, maxAttempts: 1 });
      try {
        const err = await noCA.next().catch((e: unknown) => e);
        assert.ok(err instanceof UnavailableError, `a server certificate of an unknown CA was trusted: ${String(err)}`);
      } finally {
        await noCA.close();
      }
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
