package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence"
	"github.com/snowfence/snowfence/api"
)

// spec is the part of the OpenAPI document the tests read.
type spec struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas   map[string]json.RawMessage `json:"schemas"`
		Responses map[string]json.RawMessage `json:"responses"`
	} `json:"components"`
}

type operation struct {
	OperationID string                     `json:"operationId"`
	Responses   map[string]json.RawMessage `json:"responses"`
	// Listener is the listener that serves the operation with an admin
	// listener apart: "main" or "admin".
	Listener string `json:"x-snowfence-listener"`
}

func loadSpec(t *testing.T) *spec {
	t.Helper()
	var s spec
	dec := json.NewDecoder(bytes.NewReader(api.OpenAPI()))
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("api/openapi.json: %v", err)
	}
	if !strings.HasPrefix(s.OpenAPI, "3.") {
		t.Fatalf("openapi = %q, want 3.x", s.OpenAPI)
	}
	return &s
}

// concrete turns a path template into a request path.
func concrete(path string) string {
	return strings.NewReplacer("{id}", example, "{pid}", examplePID, "{asset}", "status.js").Replace(path)
}

// specOps lists "method path" for every operation in the spec.
func (s *spec) ops(t *testing.T) map[string]operation {
	t.Helper()
	out := map[string]operation{}
	for path, methods := range s.Paths {
		for m, raw := range methods {
			if m == "parameters" || m == "summary" || m == "description" {
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", m, path, err)
			}
			out[strings.ToUpper(m)+" "+path] = op
		}
	}
	return out
}

// TestOpenAPIRoutes checks that the spec and the route table agree: every
// operation in the spec is routed, and every route is in the spec under the
// same method, path, operation ID and listener (x-snowfence-listener, which
// deployments read: deploy/kubernetes's probes), with the statuses the spec
// documents.
func TestOpenAPIRoutes(t *testing.T) {
	s := loadSpec(t)
	ops := s.ops(t)
	f := newFixture(t, nil, nil)
	for key := range ops {
		method, path, _ := strings.Cut(key, " ")
		body, ct := "", ""
		switch path {
		case "/v1/ids:batch":
			body, ct = `{"count":3}`, "application/json"
		case "/v1/public-ids":
			body, ct = `{"type":"order","ids":["`+example+`"]}`, "application/json"
		case "/v1/public-ids:mint":
			body, ct = `{"type":"order","count":2}`, "application/json"
		}
		r := f.do(req{method: method, target: concrete(path), body: body, contentType: ct})
		if r.status == http.StatusNotFound || r.status == http.StatusMethodNotAllowed {
			t.Errorf("%s: status %d, body %s; the spec's operation is not routed", key, r.status, r.body)
		}
	}
	rs := routes()
	for i, rt := range rs {
		key := rt.method + " " + rt.pattern
		op, ok := ops[key]
		if !ok {
			t.Errorf("route %s is not in api/openapi.json", key)
			continue
		}
		if op.OperationID != rt.operation {
			t.Errorf("route %s: operation %q, api/openapi.json has %q", key, rt.operation, op.OperationID)
		}
		listener := "main"
		if rt.admin || rt.operator {
			listener = "admin"
		}
		if op.Listener != listener {
			t.Errorf("route %s: served on the %s listener, api/openapi.json's x-snowfence-listener says %q", key, listener, op.Listener)
		}
		var documented []int
		for status := range op.Responses {
			code, err := strconv.Atoi(status)
			if err != nil {
				t.Errorf("route %s: response %q is not a status code", key, status)
				continue
			}
			documented = append(documented, code)
		}
		slices.Sort(documented)
		// Every route also answers 404 on the listener that does not
		// serve it (part.elsewhere), which its statuses leave out.
		served := append(slices.Clone(rt.statuses), http.StatusNotFound)
		if got := slices.Compact(slices.Sorted(slices.Values(served))); !slices.Equal(got, documented) {
			t.Errorf("route %s: statuses %v, api/openapi.json documents %v", key, got, documented)
		}
		for _, code := range rt.statuses {
			if statusIndex(code) < 0 {
				t.Errorf("route %s: status %d has no request counter of its own (statusIndex)", key, code)
			}
		}
		wantParam := ""
		if rt.param {
			wantParam = strings.TrimSuffix(strings.TrimPrefix(concrete(rt.pattern), rt.prefix), rt.suffix)
		}
		if got, param := match(rs, concrete(rt.pattern)); got != endpoint(i) || param != wantParam {
			t.Errorf("match(%q) = %d, %q; want %d, %q", concrete(rt.pattern), got, param, i, wantParam)
		}
	}
	if len(rs) != len(ops) {
		t.Errorf("%d routes, %d operations in the spec", len(rs), len(ops))
	}
}

// statusRecipes produce each documented status: "METHOD path status" →
// the fixture (the generator fenced, the service still starting, a quota
// that refuses the caller as over its quota or forbidden), and the request.
func statusRecipes() map[string]struct {
	fixture fixtureKind
	r       req
} {
	type recipe = struct {
		fixture fixtureKind
		r       req
	}
	big := `{"count":1` + strings.Repeat(" ", 5000) + `}`
	post := func(target, body string) req {
		return req{method: "POST", target: target, body: body, contentType: "application/json"}
	}
	get := func(target string) req { return req{method: "GET", target: target} }
	rs := map[string]recipe{
		"POST /v1/ids 200":                          {r: post("/v1/ids", "")},
		"POST /v1/ids 400":                          {r: post("/v1/ids?count=0", "")},
		"POST /v1/ids 405":                          {r: get("/v1/ids")},
		"POST /v1/ids 413":                          {r: post("/v1/ids", big)},
		"POST /v1/ids 403":                          {fixture: forbidden, r: post("/v1/ids", "")},
		"POST /v1/ids 429":                          {fixture: limited, r: post("/v1/ids", "")},
		"POST /v1/ids 503":                          {fixture: fenced, r: post("/v1/ids", "")},
		"POST /v1/ids:batch 200":                    {r: post("/v1/ids:batch", `{"count":3}`)},
		"POST /v1/ids:batch 400":                    {r: post("/v1/ids:batch", `{"count":"3"}`)},
		"POST /v1/ids:batch 405":                    {r: get("/v1/ids:batch")},
		"POST /v1/ids:batch 413":                    {r: post("/v1/ids:batch", big)},
		"POST /v1/ids:batch 403":                    {fixture: forbidden, r: post("/v1/ids:batch", `{"count":3}`)},
		"POST /v1/ids:batch 429":                    {fixture: limited, r: post("/v1/ids:batch", `{"count":3}`)},
		"POST /v1/ids:batch 503":                    {fixture: fenced, r: post("/v1/ids:batch", `{"count":3}`)},
		"GET /v1/ids/{id}/decode 200":               {r: get("/v1/ids/" + example + "/decode")},
		"GET /v1/ids/{id}/decode 400":               {r: get("/v1/ids/x/decode")},
		"GET /v1/ids/{id}/decode 405":               {r: post("/v1/ids/"+example+"/decode", "")},
		"GET /v1/ids/{id}/decode 200 in the future": {r: get("/v1/ids/9223372036854775807/decode")},
		"GET /v1/ids/{id}/decode 503":               {fixture: starting, r: get("/v1/ids/" + example + "/decode")},

		// Sealing IDs of one's choosing is a permission; minting them
		// sealed is not.
		"POST /v1/public-ids 403 may not seal":                  {fixture: noSealers, r: post("/v1/public-ids", `{"type":"order","ids":["1"]}`)},
		"POST /v1/public-ids:mint 200":                          {r: post("/v1/public-ids:mint", `{"type":"order","count":3}`)},
		"POST /v1/public-ids:mint 200 by one that may not seal": {fixture: noSealers, r: post("/v1/public-ids:mint", `{"type":"order","count":1}`)},
		"POST /v1/public-ids:mint 400":                          {r: post("/v1/public-ids:mint", `{"type":"order","count":1001}`)},
		"POST /v1/public-ids:mint 403":                          {fixture: forbidden, r: post("/v1/public-ids:mint", `{"type":"order","count":1}`)},
		"POST /v1/public-ids:mint 405":                          {r: get("/v1/public-ids:mint")},
		"POST /v1/public-ids:mint 413":                          {r: post("/v1/public-ids:mint", `{"type":"order","count":1}`+strings.Repeat(" ", 70000))},
		"POST /v1/public-ids:mint 429":                          {fixture: limited, r: post("/v1/public-ids:mint", `{"type":"order","count":5}`)},
		"POST /v1/public-ids:mint 501":                          {fixture: noPublicIDKeys, r: post("/v1/public-ids:mint", `{"type":"order","count":1}`)},
		"POST /v1/public-ids:mint 503":                          {fixture: starting, r: post("/v1/public-ids:mint", `{"type":"order","count":1}`)},
		"POST /v1/public-ids:mint 503 fenced":                   {fixture: fenced, r: post("/v1/public-ids:mint", `{"type":"order","count":1}`)},

		// Public IDs.
		"POST /v1/public-ids 200":              {r: post("/v1/public-ids", `{"type":"order","ids":["`+example+`","1"]}`)},
		"POST /v1/public-ids 400":              {r: post("/v1/public-ids", `{"type":"Order","ids":["1"]}`)},
		"POST /v1/public-ids 403":              {fixture: forbidden, r: post("/v1/public-ids", `{"type":"order","ids":["1"]}`)},
		"POST /v1/public-ids 429":              {fixture: limited, r: post("/v1/public-ids", `{"type":"order","ids":["1"]}`)},
		"POST /v1/public-ids 405":              {r: get("/v1/public-ids")},
		"POST /v1/public-ids 413":              {r: post("/v1/public-ids", `{"type":"order","ids":["1"]`+strings.Repeat(" ", 70000)+`}`)},
		"POST /v1/public-ids 501":              {fixture: noPublicIDKeys, r: post("/v1/public-ids", `{"type":"order","ids":["1"]}`)},
		"POST /v1/public-ids 503":              {fixture: starting, r: post("/v1/public-ids", `{"type":"order","ids":["1"]}`)},
		"GET /v1/public-ids/{pid} 200":         {r: get("/v1/public-ids/" + examplePID)},
		"GET /v1/public-ids/{pid} 400":         {r: get("/v1/public-ids/order_x")},
		"GET /v1/public-ids/{pid} 403":         {fixture: noOpeners, r: get("/v1/public-ids/" + examplePID)},
		"GET /v1/public-ids/{pid} 404":         {r: get("/v1/public-ids/order_20000000000000000000000000a")},
		"GET /v1/public-ids/{pid} 405":         {r: post("/v1/public-ids/"+examplePID, "")},
		"GET /v1/public-ids/{pid} 501":         {fixture: noPublicIDKeys, r: get("/v1/public-ids/" + examplePID)},
		"GET /v1/public-ids/{pid} 503":         {fixture: starting, r: get("/v1/public-ids/" + examplePID)},
		"GET /v1/public-ids/{pid} 404 retired": {r: get("/v1/public-ids/order_05peqp0shbffmh4asf3fn5nb6zt")},
		"GET /v1/public-ids/{pid} 404 unknown": {r: get("/v1/public-ids/order_95peqp0shbffmh4asf3fn5nb6zt")},
		"GET /healthz 200":                     {r: get("/healthz")},
		"GET /healthz 405":                     {r: post("/healthz", "")},
		"GET /healthz 503":                     {fixture: fenced, r: get("/healthz")},
		"GET /readyz 200":                      {r: get("/readyz")},
		"GET /readyz 405":                      {r: post("/readyz", "")},
		"GET /readyz 503":                      {fixture: fenced, r: get("/readyz")},
		"GET /metrics 200":                     {r: get("/metrics")},
		"GET /metrics 405":                     {r: post("/metrics", "")},
		"GET /openapi.json 200":                {r: get("/openapi.json")},
		"GET /openapi.json 405":                {r: post("/openapi.json", "")},
		"POST /v1/ids 200 with count":          {r: post("/v1/ids?count=2", "")},
		"POST /v1/ids 200 with {}":             {r: post("/v1/ids", `{}`)},
		"POST /v1/ids:batch 200 with query":    {r: post("/v1/ids:batch?count=2", "")},
		"POST /v1/ids 503 while starting":      {fixture: starting, r: post("/v1/ids", "")},
		"GET /healthz 503 while starting":      {fixture: starting, r: get("/healthz")},
		"GET /readyz 503 while starting":       {fixture: starting, r: get("/readyz")},
		"GET /livez 200":                       {r: get("/livez")},
		"GET /livez 405":                       {r: post("/livez", "")},
		"GET /livez 503":                       {fixture: stalled, r: get("/livez")},
		"GET /livez 200 while starting":        {fixture: starting, r: get("/livez")},
		"GET /livez 200 while fenced":          {fixture: fenced, r: get("/livez")},
		"GET /metrics 200 while starting":      {fixture: starting, r: get("/metrics")},

		// The status page.
		"GET / 200":                                    {r: get("/")},
		"GET / 405":                                    {r: post("/", "")},
		"GET / 200 while starting":                     {fixture: starting, r: get("/")},
		"GET /status/{asset} 200":                      {r: get("/status/status.js")},
		"GET /status/{asset} 200 css":                  {r: get("/status/status.css")},
		"GET /status/{asset} 200 icon":                 {r: get("/status/icon.svg")},
		"GET /status/{asset} 404":                      {r: get("/status/index.html")},
		"GET /status/{asset} 405":                      {r: post("/status/status.js", "")},
		"GET /v1/status 200":                           {r: get("/v1/status")},
		"GET /v1/status 405":                           {r: post("/v1/status", "")},
		"GET /v1/status 200 while fenced":              {fixture: fenced, r: get("/v1/status")},
		"GET /v1/status 200 while starting":            {fixture: starting, r: get("/v1/status")},
		"GET /v1/status/decode/{id} 200":               {r: get("/v1/status/decode/" + example)},
		"GET /v1/status/decode/{id} 400":               {r: get("/v1/status/decode/x")},
		"GET /v1/status/decode/{id} 405":               {r: post("/v1/status/decode/"+example, "")},
		"GET /v1/status/decode/{id} 200 in the future": {r: get("/v1/status/decode/9223372036854775807")},
		"GET /v1/status/decode/{id} 503":               {fixture: starting, r: get("/v1/status/decode/" + example)},
		"GET /v1/status/decode/{id} 200 with uuid":     {r: get("/v1/status/decode/" + exampleUUID)},

		// UUIDv7 and the UUIDv8 form of IDs.
		"POST /v1/uuids 200":                    {r: post("/v1/uuids", "")},
		"POST /v1/uuids 400":                    {r: post("/v1/uuids?count=1001", "")},
		"POST /v1/uuids 403":                    {fixture: forbidden, r: post("/v1/uuids", "")},
		"POST /v1/uuids 405":                    {r: get("/v1/uuids")},
		"POST /v1/uuids 413":                    {r: post("/v1/uuids", big)},
		"POST /v1/uuids 429":                    {fixture: limited, r: post("/v1/uuids?count=5", "")},
		"POST /v1/uuids 503":                    {fixture: starting, r: post("/v1/uuids", "")},
		"POST /v1/uuids 200 with count":         {r: post("/v1/uuids?count=1000", "")},
		"POST /v1/uuids 200 with {}":            {r: post("/v1/uuids", `{}`)},
		"POST /v1/uuids 200 while fenced":       {fixture: fenced, r: post("/v1/uuids?count=2", "")},
		"POST /v1/uuids 400 with a body":        {r: post("/v1/uuids", `{"count":2}`)},
		"GET /v1/ids/{id}/decode 200 with uuid": {r: get("/v1/ids/" + exampleUUID + "/decode")},
		"GET /v1/ids/{id}/decode 400 with uuid": {r: get("/v1/ids/0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f/decode")},

		// A body that does not say it is JSON.
		"POST /v1/ids 415":                     {r: req{method: "POST", target: "/v1/ids", body: `{}`}},
		"POST /v1/ids:batch 415":               {r: req{method: "POST", target: "/v1/ids:batch", body: `{"count":3}`, contentType: "text/plain"}},
		"POST /v1/uuids 415":                   {r: req{method: "POST", target: "/v1/uuids", body: `null`}},
		"POST /v1/public-ids 415":              {r: req{method: "POST", target: "/v1/public-ids", body: `{"type":"order","ids":["1"]}`}},
		"POST /v1/public-ids:mint 415":         {r: req{method: "POST", target: "/v1/public-ids:mint", body: `{"type":"order","count":1}`, contentType: "text/plain"}},
		"POST /v1/public-ids:mint 415 no type": {r: req{method: "POST", target: "/v1/public-ids:mint", body: `{"type":"order","count":1}`}},
		"POST /v1/ids 200 with null":           {r: post("/v1/ids", `null`)},
		"POST /v1/uuids 200 with null":         {r: post("/v1/uuids", `null`)},
		"POST /v1/ids:batch 200 with {}":       {r: post("/v1/ids:batch?count=2", `{}`)},
		"POST /v1/ids:batch 200 with null":     {r: post("/v1/ids:batch?count=2", `null`)},
		"POST /v1/ids:batch 400 count in both": {r: post("/v1/ids:batch?count=2", `{"count":2}`)},
	}
	// Each operation asked of the listener that does not serve it (with
	// --admin-listen): 404 not_found.
	for _, rt := range routes() {
		key := rt.method + " " + rt.pattern + " 404"
		if _, taken := rs[key]; taken {
			key += " elsewhere"
		}
		r := get(concrete(rt.pattern))
		if rt.method == http.MethodPost {
			r = post(concrete(rt.pattern), "")
		}
		k := adminListener
		if rt.admin || rt.operator {
			k = mainListener
		}
		rs[key] = recipe{fixture: k, r: r}
	}
	return rs
}

// fixtureKind names the server a status recipe runs on.
type fixtureKind int

const (
	normal         fixtureKind = iota
	fenced                     // the generator holds no lease
	starting                   // starting (Config.Starting): no number yet
	limited                    // a quota that answers 429
	forbidden                  // a quota that answers 403
	noPublicIDKeys             // no keyset: public IDs disabled
	noOpeners                  // a keyset, but no caller may open
	noSealers                  // a keyset, but no caller may seal IDs of its choosing
	mainListener               // APIHandler: the main listener with --admin-listen
	adminListener              // AdminHandler: the admin listener
	stalled                    // a lease whose keeper's loop is wedged (StallReporter)
)

// must is newStarting's fixture.
func must(f *fixture, _ *startingReason) *fixture { return f }

// TestOpenAPIStatuses produces every status the spec documents and checks
// each response body against the documented schema.
func TestOpenAPIStatuses(t *testing.T) {
	s := loadSpec(t)
	ops := s.ops(t)
	recipes := statusRecipes()
	quotaErr := &QuotaError{RetryAfter: 1500 * time.Millisecond, Policy: `"ids";q=1000;w=1`, Limit: `"ids";r=0;t=2`, Message: "over quota"}
	fixtures := map[fixtureKind]*fixture{
		normal:         newFixture(t, nil, nil),
		fenced:         newFixture(t, func(c *snowfence.Config) { c.Lease = nilLease{} }, nil),
		starting:       must(newStarting(t, 0, nil)),
		limited:        newFixture(t, nil, func(c *Config) { c.Quota = &fakeQuota{err: quotaErr} }),
		forbidden:      newFixture(t, nil, func(c *Config) { c.Quota = &fakeQuota{err: errors.New("caller removed")} }),
		noPublicIDKeys: newFixture(t, nil, func(c *Config) { c.PublicIDKeys, c.PublicIDOpeners, c.PublicIDSealers = nil, nil, nil }),
		noOpeners:      newFixture(t, nil, func(c *Config) { c.PublicIDOpeners = nil }),
		noSealers:      newFixture(t, nil, func(c *Config) { c.PublicIDSealers = nil }),
		mainListener:   newFixture(t, nil, nil),
		adminListener:  newFixture(t, nil, nil),
		stalled:        newFixture(t, nil, func(c *Config) { c.Lease = &stallingStatus{stalled: true, since: 17 * time.Second} }),
	}
	fixtures[mainListener].h = fixtures[mainListener].srv.APIHandler()
	fixtures[adminListener].h = fixtures[adminListener].srv.AdminHandler()
	pick := func(k fixtureKind) *fixture { return fixtures[k] }
	documented := map[string]bool{}
	for key, op := range ops {
		for status, raw := range op.Responses {
			name := key + " " + status
			documented[name] = true
			rc, found := recipes[name]
			if !found {
				t.Errorf("%s is documented but the test has no recipe for it", name)
				continue
			}
			f := pick(rc.fixture)
			got := f.do(rc.r)
			if fmt.Sprint(got.status) != status {
				t.Errorf("%s: got status %d, body %.300s", name, got.status, got.body)
				continue
			}
			checkResponse(t, s, name, raw, got)
		}
	}
	for name, rc := range recipes {
		method, rest, _ := strings.Cut(name, " ")
		path, status, _ := strings.Cut(rest, " ")
		status, extra, _ := strings.Cut(status, " ")
		if extra == "" && !documented[name] {
			t.Errorf("recipe %s is not documented in the spec", name)
			continue
		}
		if extra != "" { // a further case of a documented status
			f := pick(rc.fixture)
			got := f.do(rc.r)
			if fmt.Sprint(got.status) != status {
				t.Errorf("%s: got status %d, body %.300s", name, got.status, got.body)
				continue
			}
			var op operation
			json.Unmarshal(s.Paths[path][strings.ToLower(method)], &op)
			checkResponse(t, s, name, op.Responses[status], got)
		}
	}
}

// checkResponse checks a response's headers and body against a documented
// response.
func checkResponse(t *testing.T, s *spec, name string, raw json.RawMessage, got response) {
	t.Helper()
	var resp struct {
		Headers map[string]json.RawMessage `json:"headers"`
		Content map[string]struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"content"`
	}
	s.resolve(t, raw, &resp)
	for h := range resp.Headers {
		if got.header.Get(h) == "" {
			t.Errorf("%s: documented header %s is missing", name, h)
		}
	}
	ct := got.header.Get("Content-Type")
	mt, _, _ := strings.Cut(ct, ";")
	media, found := resp.Content[mt]
	if !found {
		t.Errorf("%s: Content-Type %q is not documented", name, ct)
		return
	}
	if mt != "application/json" {
		return
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(got.body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Errorf("%s: body is not JSON: %v", name, err)
		return
	}
	if err := s.validate(media.Schema, v, "$"); err != nil {
		t.Errorf("%s: body %.300s: %v", name, got.body, err)
	}
}

// resolve follows a $ref, if raw is one, and decodes the target into v.
func (s *spec) resolve(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	raw = s.deref(raw)
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

func (s *spec) deref(raw json.RawMessage) json.RawMessage {
	for range 10 {
		var r struct {
			Ref string `json:"$ref"`
		}
		if json.Unmarshal(raw, &r) != nil || r.Ref == "" {
			return raw
		}
		switch {
		case strings.HasPrefix(r.Ref, "#/components/schemas/"):
			raw = s.Components.Schemas[strings.TrimPrefix(r.Ref, "#/components/schemas/")]
		case strings.HasPrefix(r.Ref, "#/components/responses/"):
			raw = s.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]
		default:
			return raw
		}
	}
	return raw
}

// validate checks v against the subset of JSON Schema the spec uses.
func (s *spec) validate(raw json.RawMessage, v any, at string) error {
	var sc struct {
		Type                 string                     `json:"type"`
		Required             []string                   `json:"required"`
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
		Items                json.RawMessage            `json:"items"`
		OneOf                []json.RawMessage          `json:"oneOf"`
		MinProperties        int                        `json:"minProperties"`
		Pattern              string                     `json:"pattern"`
		Enum                 []any                      `json:"enum"`
	}
	if err := json.Unmarshal(s.deref(raw), &sc); err != nil {
		return err
	}
	if len(sc.OneOf) > 0 {
		var errs []string
		for _, alt := range sc.OneOf {
			err := s.validate(alt, v, at)
			if err == nil {
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("%s matches no alternative: %s", at, strings.Join(errs, "; "))
	}
	switch sc.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not an object", at)
		}
		if len(m) < sc.MinProperties {
			return fmt.Errorf("%s has %d members, fewer than %d", at, len(m), sc.MinProperties)
		}
		for _, k := range sc.Required {
			if _, ok := m[k]; !ok {
				return fmt.Errorf("%s lacks required %q", at, k)
			}
		}
		for k, fv := range m {
			ps, ok := sc.Properties[k]
			if !ok {
				if sc.AdditionalProperties != nil && !*sc.AdditionalProperties {
					return fmt.Errorf("%s has undocumented %q", at, k)
				}
				continue
			}
			if err := s.validate(ps, fv, at+"."+k); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s is not an array", at)
		}
		for i, x := range a {
			if err := s.validate(sc.Items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s is not a string", at)
		}
		if sc.Pattern != "" && !regexp.MustCompile(sc.Pattern).MatchString(str) {
			return fmt.Errorf("%s = %q does not match %s", at, str, sc.Pattern)
		}
		if len(sc.Enum) > 0 && !slices.Contains(sc.Enum, any(str)) {
			return fmt.Errorf("%s = %q is not in the enum", at, str)
		}
	case "integer":
		n, ok := v.(json.Number)
		if !ok || strings.ContainsAny(string(n), ".eE") {
			return fmt.Errorf("%s = %v is not an integer literal", at, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s is not a boolean", at)
		}
	}
	return nil
}

// TestOpenAPIErrorCodes checks that the documented error codes are exactly
// the server's.
func TestOpenAPIErrorCodes(t *testing.T) {
	s := loadSpec(t)
	var e struct {
		Properties struct {
			Error struct {
				Properties struct {
					Code struct {
						Enum []string `json:"enum"`
					} `json:"code"`
				} `json:"properties"`
			} `json:"error"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(s.Components.Schemas["Error"], &e); err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(e.Properties.Error.Properties.Code.Enum)
	want := []string{
		CodeInvalidCount, CodeInvalidBody, CodeInvalidQuery, CodeConflictingCount, CodeInvalidContentType,
		CodeBodyTooLarge, CodeInvalidID, CodeMethodNotAllowed, CodeNotFound,
		CodeFenced, CodeClockBackwards, CodeClockUnsynchronized, CodeLayoutExhausted, CodeNoLayout,
		CodeClosed, CodeCanceled, CodeShuttingDown, CodeUnavailable, CodeInternal,
		CodeStarting, CodeRateLimited, CodeForbidden,
		CodeInvalidType, CodeInvalidPublicID, CodePublicIDNotFound, CodePublicIDsDisabled,
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("documented codes %v\nserver codes     %v", got, want)
	}
}

func TestOpenAPIServed(t *testing.T) {
	f := newFixture(t, nil, nil)
	r := f.do(req{target: "/openapi.json"})
	if r.status != http.StatusOK || r.body != string(api.OpenAPI()) {
		t.Errorf("/openapi.json: status %d, body differs from api/openapi.json", r.status)
	}
}
