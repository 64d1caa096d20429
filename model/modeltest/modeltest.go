// Package modeltest serves the real provider wire formats from a script,
// so adapters, the engine and the built binary can be tested against
// HTTP without a network or an account. One Server speaks OpenAI Chat
// Completions (POST /v1/chat/completions and /chat/completions), the
// OpenAI Responses API (POST /v1/responses and /responses), Anthropic
// Messages (POST /v1/messages) and Gemini (POST
// /v1beta/models/MODEL:streamGenerateContent and :generateContent),
// streamed as server-sent events
// or as one JSON document as each request asks, and answers each request
// with the next round of a script.Script. A round with an "error" answers
// with that HTTP status, a provider-shaped JSON error body and a
// Retry-After header; status 0 drops the connection without an answer.
//
// Every request is recorded, body whole, so a test can assert on what the
// model was sent.
//
// It is a library for tests and test harnesses; it imports only package
// model and model/script.
package modeltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"meka.dev/meka/model/script"
)

// Recorded is one request the server received.
type Recorded struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Handler answers requests from a script. It is an http.Handler, usable
// in process (for instance behind a RoundTripper in a synctest bubble) as
// well as behind a Server. It is safe for concurrent use; concurrent
// requests take rounds in the order they arrive.
type Handler struct {
	script *script.Script

	mu       sync.Mutex // guards next, requests and header
	next     int
	requests []Recorded
	header   http.Header
}

// SetHeader has every later response carry the header key: value, as
// providers send rate-limit headers.
func (h *Handler) SetHeader(key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.header == nil {
		h.header = http.Header{}
	}
	h.header.Set(key, value)
}

// NewHandler returns a handler playing s from its first round.
func NewHandler(s *script.Script) *Handler {
	if s == nil {
		s = &script.Script{}
	}
	return &Handler{script: s}
}

// Requests returns every request received so far, in order.
func (h *Handler) Requests() []Recorded {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.requests)
}

// Remaining reports how many rounds have not been played.
func (h *Handler) Remaining() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.script.Rounds) - h.next
}

// wire is what differs between the two formats.
type wire interface {
	writeError(w http.ResponseWriter, status int, body, retryAfter string)
	writeJSON(w http.ResponseWriter, r *script.Round, req *request)
	writeStream(w http.ResponseWriter, r *script.Round, req *request)
}

// request is what the server reads from a request body.
type request struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// seq numbers the round, for ids and signatures.
	seq int
	// hang, when set, is waited on where the stream would end: a stalled
	// stream sends its content and then nothing.
	hang <-chan struct{}
}

// stallEnd hangs a stalled stream until the client gives up; it reports
// whether the stream should stop there.
func (r *request) stallEnd() bool {
	if r.hang == nil {
		return false
	}
	<-r.hang
	return true
}

// ServeHTTP answers one request with the next round, in the wire format
// its path names.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var wf wire
	geminiName, geminiStream, isGemini := geminiModel(r.URL.Path)
	switch r.URL.Path {
	case "/v1/chat/completions", "/chat/completions":
		wf = openAIWire{}
	case "/v1/messages":
		wf = anthropicWire{}
	case "/v1/responses", "/responses":
		wf = responsesWire{}
	default:
		if !isGemini {
			http.NotFound(w, r)
			return
		}
		wf = geminiWire{}
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		wf.writeError(w, http.StatusMethodNotAllowed, "modeltest: use POST", "")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		wf.writeError(w, http.StatusBadRequest, "modeltest: read body: "+err.Error(), "")
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		h.record(r, body)
		wf.writeError(w, http.StatusBadRequest, "modeltest: decode body: "+err.Error(), "")
		return
	}
	round, seq, err := h.take(r, body)
	if err != nil {
		wf.writeError(w, http.StatusBadRequest, err.Error(), "")
		return
	}
	req.seq = seq
	h.mu.Lock()
	for k, v := range h.header {
		w.Header()[k] = v
	}
	h.mu.Unlock()
	if isGemini {
		req.Model, req.Stream = geminiName, geminiStream
	}
	if req.Model == "" {
		req.Model = "modeltest"
	}
	switch {
	case round.Stall == script.StallResponse:
		<-r.Context().Done()
	case round.Stall == script.StallStream && req.Stream:
		req.hang = r.Context().Done()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		wf.writeStream(w, &round, &req)
	case round.Error != nil && round.Error.Status == 0:
		// Drop the connection without an answer: the client sees it reset.
		panic(http.ErrAbortHandler)
	case round.Error != nil:
		wf.writeError(w, round.Error.Status, round.Error.Body, round.Error.RetryAfterHeader())
	case req.Stream:
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		wf.writeStream(w, &round, &req)
	default:
		wf.writeJSON(w, &round, &req)
	}
}

// take records the request and returns the round that answers it, and
// its 1-based number.
func (h *Handler) take(r *http.Request, body []byte) (script.Round, int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.recordLocked(r, body)
	if h.next >= len(h.script.Rounds) {
		return script.Round{}, n, fmt.Errorf("modeltest: request %d is past the end of the script (it has %d rounds)", n, len(h.script.Rounds))
	}
	round := h.script.Rounds[h.next]
	h.next++
	return round, h.next, nil
}

// Transport returns a RoundTripper that serves every request with h in
// process, whatever its host: no socket, so a client can run inside a
// testing/synctest bubble, where time is fake and the retry waits of a
// scripted Retry-After pass instantly. A status 0 round reads as a reset
// connection.
func (h *Handler) Transport() http.RoundTripper { return transport{h} }

type transport struct{ h *Handler }

func (t transport) RoundTrip(req *http.Request) (res *http.Response, err error) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				panic(v)
			}
			res, err = nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
		}
	}()
	if req.Body != nil {
		defer req.Body.Close()
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	res = rec.Result()
	res.Request = req
	return res, nil
}

// Reply returns the body h answers a POST of reqBody to path with,
// taking one round: the bytes a decoder is fed by Replay.
func (h *Handler) Reply(path, reqBody string) string {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(reqBody)))
	return rec.Body.String()
}

// Replay is a RoundTripper answering every request with its bytes as a
// 200 event stream, consuming no round: for fuzzing and benchmarking a
// decoder with no server in between.
type Replay string

func (b Replay) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(strings.NewReader(string(b))),
		Request:    r,
	}, nil
}

// record keeps a request and returns how many there have been.
func (h *Handler) record(r *http.Request, body []byte) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.recordLocked(r, body)
}

func (h *Handler) recordLocked(r *http.Request, body []byte) int {
	h.requests = append(h.requests, Recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	return len(h.requests)
}

// Server is a Handler listening on 127.0.0.1.
type Server struct {
	*Handler
	// URL is the server's base URL, http://127.0.0.1:port, with no path;
	// both adapters take it as their BaseURL.
	URL string
	srv *httptest.Server
}

// Start serves s on a free port of 127.0.0.1 until Close.
func Start(s *script.Script) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start modeltest server: %w", err)
	}
	h := NewHandler(s)
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return &Server{Handler: h, URL: srv.URL, srv: srv}, nil
}

// NewServer starts a server for a test and closes it when the test ends.
func NewServer(t testing.TB, s *script.Script) *Server {
	t.Helper()
	srv, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// Close stops the server and waits for its requests to finish.
func (s *Server) Close() { s.srv.Close() }

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// sse writes server-sent events, flushing each so the client reads them
// as they would arrive from a provider.
type sse struct{ w http.ResponseWriter }

func (s sse) event(name string, v any) {
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // the values are the server's own
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	s.raw(b.Bytes())
}

func (s sse) raw(b []byte) {
	_, _ = s.w.Write(b)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// errorBody is body as the provider would send it: verbatim when it is
// already a JSON object, else wrapped by wrap.
func errorBody(body string, wrap func(msg string) any) []byte {
	if t := bytes.TrimSpace([]byte(body)); len(t) > 0 && t[0] == '{' && json.Valid(t) {
		return t
	}
	b, _ := json.Marshal(wrap(body))
	return b
}

func writeErrorBody(w http.ResponseWriter, status int, body []byte, retryAfter string) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
