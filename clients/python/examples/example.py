# clients/python/examples/example.py
import json
import os

from snowfence_client import Client, decode

url = os.environ.get("SNOWFENCE_URL", "http://127.0.0.1:8080")
with Client(endpoints=[url]) as client:
    ids = [client.next() for _ in range(3)]
for id in ids:
    print(id)
print(json.dumps(decode(ids[0], "v1").to_dict(), separators=(",", ":")))
