package server

import (
	"embed"
	"fmt"
	"net/http"
	"path"
)

// statusFiles are the status page and its assets, embedded: the page
// loads nothing from anywhere but the server that serves it (no CDN, no
// font, no outside request), and its Content-Security-Policy says so to
// the browser.
//
//go:embed statuspage/index.html statuspage/status.css statuspage/status.js statuspage/icon.svg
var statusFiles embed.FS

// statusAssets are the files of /status/{asset}, by name, with their
// Content-Type.
var statusAssets = map[string]string{
	"status.css": "text/css; charset=utf-8",
	"status.js":  "text/javascript; charset=utf-8",
	"icon.svg":   "image/svg+xml",
}

// statusCSP is the page's Content-Security-Policy: scripts, styles, images
// and requests from this origin only, no frames, no forms, no plugins.
const statusCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// statusPage answers GET / with the status page.
func (s *Server) statusPage(w http.ResponseWriter, _ *http.Request, _ string) int {
	return s.writeStatusFile(w, "index.html", "text/html; charset=utf-8")
}

// statusAsset answers GET /status/{asset} with one of the page's assets.
func (s *Server) statusAsset(w http.ResponseWriter, _ *http.Request, name string) int {
	ct, ok := statusAssets[name]
	if !ok {
		return s.writeError(w, &apiError{status: http.StatusNotFound, code: CodeNotFound,
			message: fmt.Sprintf("the status page has no asset %s", quoteShort(name))})
	}
	return s.writeStatusFile(w, name, ct)
}

// writeStatusFile writes an embedded file of the page. The page and its
// assets are never cached, so a browser never runs one release's script
// against another release's JSON.
func (s *Server) writeStatusFile(w http.ResponseWriter, name, contentType string) int {
	b, err := statusFiles.ReadFile(path.Join("statuspage", name))
	if err != nil { // every name is embedded: a build that lost one
		return s.writeError(w, &apiError{status: http.StatusInternalServerError, code: CodeInternal, message: err.Error()})
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", statusCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	w.Write(b)
	return http.StatusOK
}
