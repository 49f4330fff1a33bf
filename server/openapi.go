package server

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 description of every route. Its
// servers[0].url is the placeholder "{base_url}", replaced when served.
//
//go:embed openapi.json
var openAPIDocument []byte

// serveOpenAPI answers GET /openapi.json with the document, its server URL
// set to the base URL.
func (h *handler) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	url, _ := json.Marshal(h.baseURL(r)) // a string always marshals
	writeJSON(w, http.StatusOK, bytes.Replace(h.openAPI, []byte(`"{base_url}"`), url, 1))
}
