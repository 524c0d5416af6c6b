// clients/js/examples/example.mjs
import { Client, decode } from "@snowfence/client";

const url = process.env.SNOWFENCE_URL ?? "http://127.0.0.1:8080";
const client = new Client({ endpoints: [url] });
try {
  const ids = [await client.next(), await client.next(), await client.next()];
  for (const id of ids) console.log(id.toString());
  console.log(JSON.stringify(decode(ids[0], "v1")));
} finally {
  await client.close();
}
