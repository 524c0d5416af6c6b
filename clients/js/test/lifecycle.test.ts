// The client does not keep a process alive by its probes or its idle
// connections: a program that forgets close() still exits.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { deadURL, Scripted } from "./helpers.js";

const index = fileURLToPath(new URL("../src/index.js", import.meta.url));

test("probes (on an hour's interval) and kept-alive connections do not keep the process alive", async () => {
  const live = await new Scripted().start();
  const dead = await deadURL();
  // The child fails over from the dead endpoint (so probes of it start,
  // every hour), takes an ID, and ends without close(): it must exit.
  const program = `
    import { Client } from ${JSON.stringify(index)};
    const c = new Client({ endpoints: [${JSON.stringify(dead)}, ${JSON.stringify(live.url)}], failureThreshold: 1, probeIntervalMs: 3600000 });
    const id = await c.next();
    const st = c.stats();
    console.log(JSON.stringify({ id: String(id), endpoint: st.endpoint, inService: st.inService }));
  `;
  try {
    const child = spawn(process.execPath, ["--input-type=module", "-e", program], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const code = await new Promise<number | null>((r) => child.on("exit", (c) => r(c)));
    clearTimeout(killer);
    assert.equal(code, 0, `the child did not exit by itself (killed after 30 s); output ${out}`);
    assert.deepEqual(JSON.parse(out), { id: "1", endpoint: 1, inService: [false, true] });
  } finally {
    await live.stop();
  }
});
