-- wrk script: POST /v1/ids:batch with {"count":1000}, a thousand IDs per
-- request.
--   wrk -t1 -c32 -d10s --latency -s bench/load/batch.lua http://127.0.0.1:8080
wrk.method = "POST"
wrk.path = "/v1/ids:batch"
wrk.body = '{"count":1000}'
wrk.headers["Content-Type"] = "application/json"
