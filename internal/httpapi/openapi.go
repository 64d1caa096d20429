package httpapi

import (
	_ "embed"
	"net/http"
)

// openapiDoc is the API's OpenAPI 3.1 document; the tests check every
// response they get against it.
//
//go:embed openapi.json
var openapiDoc []byte

// OpenAPI returns the API's OpenAPI 3.1 document.
func OpenAPI() []byte { return openapiDoc }

func (srv *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiDoc)
}
