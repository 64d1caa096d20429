package httpapi

import (
	"bytes"
	"net/http"

	"meka.dev/meka/internal/archive"
)

// export answers GET /v1/sessions/{id}/export?format=json|markdown|atif
// with what `meka sessions export` writes: the archive, the transcript or
// the ATIF trajectory.
func (srv *Server) export(w http.ResponseWriter, r *http.Request) {
	m, ok := srv.meta(w, r)
	if !ok {
		return
	}
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "json"
	}
	var ct string
	switch format {
	case "json":
		ct = "application/x-ndjson"
	case "markdown":
		ct = "text/markdown; charset=utf-8"
	case "atif":
		ct = "application/json"
	default:
		writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "format-unknown", Title: "Unknown export format",
			Detail: "format is json, markdown or atif"})
		return
	}
	s, err := archive.Load(r.Context(), srv.opts.Host.Store(), m.ID)
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	// Written whole before the status, so a failure is a problem, not a
	// cut body.
	var buf bytes.Buffer
	switch format {
	case "json":
		err = archive.WriteJSON(&buf, s, srv.opts.Now())
	case "markdown":
		err = archive.WriteMarkdown(&buf, s)
	case "atif":
		err = archive.WriteATIF(&buf, s, srv.opts.Version)
	}
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}
