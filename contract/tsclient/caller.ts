// The natural call of every operation of api/openapi.json through
// openapi-fetch, typed by what openapi-typescript generates from it
// (schema.d.ts). TestE2EGeneratedClients (cmd/snowfence) generates the
// types, type-checks this file against them with tsc --strict, and runs it
// with node against a live serve (with a public-ID keyset that lets every
// caller open and seal, without --admin-listen): node caller.js URL. It
// prints the operations it called, one a line, and exits 1 on the first
// call that did not work.
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

// The two members of Node.js's process this uses (no @types/node needed).
declare const process: { argv: string[]; exit(code: number): never };

const client = createClient<paths>({ baseUrl: process.argv[2] });

function check(op: string, res: { response: Response; error?: unknown }, ok: boolean): void {
  if (res.response.status !== 200 || res.error !== undefined || !ok) {
    throw new Error(`${op}: status ${res.response.status}, error ${JSON.stringify(res.error)}`);
  }
  console.log(op);
}

async function main(): Promise<void> {
  const one = await client.POST("/v1/ids", {});
  // id is the field to read: id_num is deprecated (a JavaScript number
  // loses its low digits), and the types say so.
  const id = one.data?.id;
  check("mintIDs", one, typeof id === "string" && /^[0-9]+$/.test(id));
  if (id === undefined) return;
  const many = await client.POST("/v1/ids", { params: { query: { count: 3 } } });
  check("mintIDs?count", many, many.data?.ids?.length === 3);
  const batch = await client.POST("/v1/ids:batch", { body: { count: 3 } });
  check("mintBatch", batch, batch.data?.ids.length === 3);
  const batchQ = await client.POST("/v1/ids:batch", { params: { query: { count: 3 } } });
  check("mintBatch?count", batchQ, batchQ.data?.ids.length === 3);
  const dec = await client.GET("/v1/ids/{id}/decode", { params: { path: { id } } });
  check("decodeID", dec, dec.data?.id === id);
  const u = await client.POST("/v1/uuids", {});
  check("mintUUIDs", u, typeof u.data?.uuid === "string");
  const us = await client.POST("/v1/uuids", { params: { query: { count: 2 } } });
  check("mintUUIDs?count", us, us.data?.uuids?.length === 2);
  const seal = await client.POST("/v1/public-ids", { body: { type: "order", ids: [id] } });
  check("sealPublicIDs", seal, seal.data?.public_ids.length === 1);
  const pid = seal.data?.public_ids[0] ?? "";
  const open = await client.GET("/v1/public-ids/{pid}", { params: { path: { pid } } });
  check("openPublicID", open, open.data?.id === id);
  // New rows' IDs, minted sealed: each public ID opens to the ID beside it.
  const minted = await client.POST("/v1/public-ids:mint", { body: { type: "order", count: 3 } });
  check("mintPublicIDs", minted, minted.data?.ids.length === 3 && minted.data?.public_ids.length === 3);
  const mpid = minted.data?.public_ids[2] ?? "";
  const mopen = await client.GET("/v1/public-ids/{pid}", { params: { path: { pid: mpid } } });
  check("openPublicID?minted", mopen, mopen.data?.id === minted.data?.ids[2]);
  const health = await client.GET("/healthz");
  check("health", health, health.data !== undefined);
  const ready = await client.GET("/readyz");
  check("ready", ready, ready.data !== undefined);
  const live = await client.GET("/livez");
  check("live", live, live.data?.alive === true);
  const metrics = await client.GET("/metrics", { parseAs: "text" });
  check("metrics", metrics, typeof metrics.data === "string" && metrics.data.length > 0);
  const spec = await client.GET("/openapi.json");
  check("openapi", spec, spec.data !== undefined);
  const page = await client.GET("/", { parseAs: "text" });
  check("statusPage", page, typeof page.data === "string" && page.data.length > 0);
  const asset = await client.GET("/status/{asset}", { params: { path: { asset: "status.js" } }, parseAs: "text" });
  check("statusAsset", asset, typeof asset.data === "string" && asset.data.length > 0);
  const status = await client.GET("/v1/status");
  check("status", status, status.data !== undefined);
  const sdec = await client.GET("/v1/status/decode/{id}", { params: { path: { id } } });
  check("statusDecodeID", sdec, sdec.data?.id === id);
}

main().catch((err: unknown) => {
  console.error(String(err));
  process.exit(1);
});
