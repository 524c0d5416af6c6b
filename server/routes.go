package server

import (
	"fmt"
	"net/http"
	"strings"
)

// route is one operation of the API. routes is the only list of them: the
// handler dispatches from it, the metrics label requests with its patterns
// and give its statuses their series up front, and TestOpenAPIRoutes holds
// it to api/openapi.json (the same methods, paths, operation IDs and
// documented statuses, nothing more or less).
type route struct {
	// method is POST or GET, the one method the route takes: HEAD is not
	// served (api/openapi.json describes none), so a GET route answers it
	// 405.
	method string
	// pattern is the path as api/openapi.json writes it, and the metrics'
	// endpoint label. A {name} segment stands for one non-empty path
	// segment.
	pattern string
	// operation is the operationId of the operation in api/openapi.json.
	operation string
	// serve answers a request routed here and returns the status it
	// answered with.
	serve serveFunc
	// statuses are the statuses the operation answers with (those
	// api/openapi.json documents for it), whether started or
	// starting; all but the 404 every route answers on the listener that
	// does not serve it (part.elsewhere), which counts as unmatched.
	statuses []int
	// admin marks the routes of the admin listener: health, readiness,
	// liveness and metrics (Server.AdminHandler).
	admin bool
	// operator marks the status page's routes: the page, its assets, the
	// JSON it polls and its decoder. They are served with the admin routes
	// (on the admin listener when there is one, never on the main listener
	// then), because they are views for the operator: holder names carry
	// host names, and a browser holds no caller certificate for a main
	// listener behind mutual TLS.
	operator bool
	// starting marks the routes served as ever while the service is
	// starting (Config.Starting); every other one answers 503 starting
	// then (starting.go).
	starting bool

	// Derived from method and pattern by routes.
	allow          string // the Allow header of a 405: method
	prefix, suffix string // the pattern around its {name} segment
	param          bool   // whether the pattern has a {name} segment
}

// serveFunc answers one request; param is the text of the pattern's {name}
// segment ("" for a pattern without one).
type serveFunc func(s *Server, w http.ResponseWriter, r *http.Request, param string) int

// endpoint identifies a route by its index in routes, for dispatch and
// metric labels. An endpoint equal to the number of routes (unmatched) is a
// request for a path no route takes.
type endpoint int

// unmatchedLabel is the metrics' endpoint label of requests for a path no
// route takes.
const unmatchedLabel = "unmatched"

// routes lists every operation of the API.
func routes() []route {
	rs := []route{
		// 403: the caller may take no IDs; 429: over its quota; 415: a body
		// that does not say it is JSON.
		{method: "POST", pattern: "/v1/ids", operation: "mintIDs", serve: (*Server).mintIDs, statuses: []int{200, 400, 403, 405, 413, 415, 429, 503}},
		{method: "POST", pattern: "/v1/ids:batch", operation: "mintBatch", serve: (*Server).mintBatch, statuses: []int{200, 400, 403, 405, 413, 415, 429, 503}},
		// 503: only while starting (Config.Starting).
		{method: "GET", pattern: "/v1/ids/{id}/decode", operation: "decodeID", serve: (*Server).decode, statuses: []int{200, 400, 405, 503}},
		// UUIDv7: no lease needed; 503 only while starting.
		{method: "POST", pattern: "/v1/uuids", operation: "mintUUIDs", serve: (*Server).mintUUIDs, statuses: []int{200, 400, 403, 405, 413, 415, 429, 503}},
		// Public IDs (package publicid). 501: no keyset; 503: only while
		// starting; 403: the caller may not seal (or the quota refuses it).
		{method: "POST", pattern: "/v1/public-ids", operation: "sealPublicIDs", serve: (*Server).sealPublicIDs, statuses: []int{200, 400, 403, 405, 413, 415, 429, 501, 503}},
		// Mint and seal: for every caller the quota admits; 503 also
		// when the generator refuses.
		{method: "POST", pattern: "/v1/public-ids:mint", operation: "mintPublicIDs", serve: (*Server).mintPublicIDs, statuses: []int{200, 400, 403, 405, 413, 415, 429, 501, 503}},
		// 403: the caller may not open; 503: only while starting.
		{method: "GET", pattern: "/v1/public-ids/{pid}", operation: "openPublicID", serve: (*Server).openPublicID, statuses: []int{200, 400, 403, 404, 405, 501, 503}},
		{method: "GET", pattern: "/healthz", operation: "health", serve: (*Server).healthz, statuses: []int{200, 405, 503}, admin: true},
		{method: "GET", pattern: "/readyz", operation: "ready", serve: (*Server).readyz, statuses: []int{200, 405, 503}, admin: true},
		// Liveness (livez.go): 503 only for a wedged keeper, never while
		// starting, refusing or draining.
		{method: "GET", pattern: "/livez", operation: "live", serve: (*Server).livez, statuses: []int{200, 405, 503}, admin: true, starting: true},
		{method: "GET", pattern: "/metrics", operation: "metrics", serve: (*Server).serveMetrics, statuses: []int{200, 405}, admin: true, starting: true},
		{method: "GET", pattern: "/openapi.json", operation: "openapi", serve: (*Server).serveOpenAPI, statuses: []int{200, 405}, starting: true},
		// The status page (statuspage.go): 404 for an asset it does not
		// have; the decoder's 503 only while starting.
		{method: "GET", pattern: "/", operation: "statusPage", serve: (*Server).statusPage, statuses: []int{200, 405}, operator: true, starting: true},
		{method: "GET", pattern: "/status/{asset}", operation: "statusAsset", serve: (*Server).statusAsset, statuses: []int{200, 404, 405}, operator: true, starting: true},
		{method: "GET", pattern: "/v1/status", operation: "status", serve: (*Server).status, statuses: []int{200, 405}, operator: true, starting: true},
		{method: "GET", pattern: "/v1/status/decode/{id}", operation: "statusDecodeID", serve: (*Server).decode, statuses: []int{200, 400, 405, 503}, operator: true},
	}
	for i := range rs {
		r := &rs[i]
		r.allow = r.method
		if before, rest, ok := strings.Cut(r.pattern, "{"); ok {
			_, after, _ := strings.Cut(rest, "}")
			r.prefix, r.suffix, r.param = before, after, true
		}
	}
	return rs
}

// takes reports whether the route answers method: its own alone.
func (rt *route) takes(method string) bool {
	return method == rt.method
}

// match finds the route of a request path, and the text of its {name}
// segment. Paths match exactly: no trailing-slash or case variants. A path
// no route takes gets endpoint len(rs).
func match(rs []route, path string) (endpoint, string) {
	for i := range rs {
		rt := &rs[i]
		if !rt.param {
			if path == rt.pattern {
				return endpoint(i), ""
			}
			continue
		}
		if seg, ok := segment(path, rt.prefix, rt.suffix); ok {
			return endpoint(i), seg
		}
	}
	return endpoint(len(rs)), ""
}

// segment returns what lies between prefix and suffix in path when that is
// one non-empty path segment.
func segment(path, prefix, suffix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok {
		return "", false
	}
	seg, ok := strings.CutSuffix(rest, suffix)
	if !ok || seg == "" || strings.IndexByte(seg, '/') >= 0 {
		return "", false
	}
	return seg, true
}

// part is the set of routes one handler serves: every route (Handler), the
// API's (APIHandler) or the admin listener's (AdminHandler).
type part uint8

const (
	allRoutes part = iota
	apiRoutes
	adminRoutes
)

// takes reports whether the part serves rt.
func (p part) takes(rt *route) bool {
	switch p {
	case apiRoutes:
		return !rt.admin && !rt.operator
	case adminRoutes:
		return rt.admin || rt.operator
	}
	return true
}

// elsewhere is the 404 for a route that another part serves: an admin
// route asked of the API's handler, or the reverse.
func (p part) elsewhere(rt *route) *apiError {
	where := "the main listener"
	if rt.admin || rt.operator {
		where = "the admin listener"
	}
	return &apiError{status: http.StatusNotFound, code: CodeNotFound,
		message: fmt.Sprintf("%s is not served here but on %s", rt.pattern, where)}
}
