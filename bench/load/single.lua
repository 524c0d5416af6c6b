-- wrk script: POST /v1/ids, one ID per request, no body.
--   wrk -t1 -c32 -d10s --latency -s bench/load/single.lua http://127.0.0.1:8080
-- (No response() callback: it would make wrk hand every body to Lua and
-- slow the client down. wrk reports non-2xx responses itself.)
wrk.method = "POST"
wrk.path = "/v1/ids"
wrk.body = nil
