// The configurations the client refuses (the Go client's TestConfigErrors).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, InvalidConfigError } from "../src/index.js";
import type { Config } from "../src/index.js";

test("the client refuses a configuration it cannot use", async () => {
  const ep = ["http://127.0.0.1:1"];
  const cases: Array<[string, unknown]> = [
    ["no endpoints", {}],
    ["empty endpoints", { endpoints: [] }],
    ["relative endpoint", { endpoints: ["ids.example"] }],
    ["other scheme", { endpoints: ["ftp://ids.example"] }],
    ["endpoint with a query", { endpoints: ["http://ids.example/?a=1"] }],
    ["endpoint with a fragment", { endpoints: ["http://ids.example/#x"] }],
    ["health URLs of another length", { endpoints: ep, healthUrls: ["http://a/healthz", "http://b/healthz"] }],
    ["bad health URL", { endpoints: ep, healthUrls: ["/healthz"] }],
    ["negative maxAgeMs", { endpoints: ep, maxAgeMs: -1000 }],
    ["NaN maxAgeMs", { endpoints: ep, maxAgeMs: NaN }],
    ["maxAgeMs as text", { endpoints: ep, maxAgeMs: "1000" }],
    ["refillPeriodMs not below maxAgeMs", { endpoints: ep, maxAgeMs: 1000, refillPeriodMs: 1000 }],
    ["maxBackoffMs below baseBackoffMs", { endpoints: ep, baseBackoffMs: 1000, maxBackoffMs: 1 }],
    ["negative minRefill", { endpoints: ep, minRefill: -1 }],
    ["fractional minRefill", { endpoints: ep, minRefill: 1.5 }],
    ["maxBuffer below minRefill", { endpoints: ep, minRefill: 100, maxBuffer: 10 }],
    ["huge maxBuffer", { endpoints: ep, maxBuffer: 2 ** 30 }],
    ["lowWater not below maxBuffer", { endpoints: ep, maxBuffer: 100, lowWater: 100 }],
    ["negative failureThreshold", { endpoints: ep, failureThreshold: -3 }],
    ["bad schedule", { endpoints: ep, schedule: "v9" }],
    ["schedule of another type", { endpoints: ep, schedule: 1 }],
  ];
  for (const [name, cfg] of cases) {
    assert.throws(() => new Client(cfg as Config), InvalidConfigError, name);
  }
  const c = new Client({ endpoints: ["http://127.0.0.1:1/"], schedule: "v1" });
  await c.close();
});
