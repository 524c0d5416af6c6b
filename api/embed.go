// Package api holds the OpenAPI 3 description of the snowfence HTTP service
// (api/openapi.json), embedded so the server can serve it at /openapi.json
// and tests can check the handlers against it. It lives in its own package
// because go:embed only reaches files in the embedding package's directory.
package api

import (
	_ "embed"
	"slices"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns a copy of the OpenAPI 3 document, as JSON.
func OpenAPI() []byte { return slices.Clone(openAPI) }
