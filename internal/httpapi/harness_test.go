package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"meka.dev/meka/internal/events"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/httpapi"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/internal/tools/fstool"
	"meka.dev/meka/internal/tools/shelltool"
	"meka.dev/meka/model/script"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan/checklist"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

const token = "test-token-0123456789abcdef"

// harness is a meka serve in process: a real SQLite file with its feed, a
// host running the scripted model, the API on 127.0.0.1.
type harness struct {
	t      testing.TB
	dbFile string
	db     *sqlite.DB
	prov   *script.Provider
	host   *host.Host
	srv    *httptest.Server
	api    *httpapi.Server
	cwd    string
	spec   *openapi
}

type sqliteFeed struct{ f *sqlite.Feed }

func (s sqliteFeed) Append(ctx context.Context, es []httpapi.Entry) ([]httpapi.Event, error) {
	in := make([]sqlite.FeedEntry, len(es))
	for i, e := range es {
		in[i] = sqlite.FeedEntry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}
	}
	evs, err := s.f.Append(ctx, in)
	return feedEvents(evs), err
}
func (s sqliteFeed) After(ctx context.Context, after int64, id string, limit int) ([]httpapi.Event, error) {
	evs, err := s.f.After(ctx, after, id, limit)
	return feedEvents(evs), err
}
func (s sqliteFeed) Before(ctx context.Context, before int64, id string, limit int) ([]httpapi.Event, error) {
	evs, err := s.f.Before(ctx, before, id, limit)
	return feedEvents(evs), err
}
func (s sqliteFeed) Bounds(ctx context.Context) (int64, int64, error) { return s.f.Bounds(ctx) }
func (s sqliteFeed) Unfinished(ctx context.Context) ([]httpapi.Event, error) {
	evs, err := s.f.Unfinished(ctx)
	return feedEvents(evs), err
}
func (s sqliteFeed) TurnEvents(ctx context.Context, id, turnID string) ([]httpapi.Event, error) {
	evs, err := s.f.TurnEvents(ctx, id, turnID)
	return feedEvents(evs), err
}
func (s sqliteFeed) Changed() <-chan struct{} { return s.f.Changed() }
func (s sqliteFeed) Prune(ctx context.Context, before time.Time) (int64, error) {
	return s.f.Prune(ctx, before)
}

func feedEvents(evs []sqlite.FeedEvent) []httpapi.Event {
	out := make([]httpapi.Event, len(evs))
	for i, e := range evs {
		out[i] = httpapi.Event{ID: e.ID, Entry: httpapi.Entry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}, Time: e.Time}
	}
	return out
}

func rowFeed(id string, rows []session.Row) []sqlite.FeedEntry {
	var out []sqlite.FeedEntry
	for _, e := range events.FromRows(id, rows) {
		out = append(out, sqlite.FeedEntry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data})
	}
	return out
}

func newHarness(t testing.TB, rounds string) *harness {
	t.Helper()
	return newHarnessWith(t, rounds)
}

// newHarnessWith is newHarness with more extensions in every session.
func newHarnessWith(t testing.TB, rounds string, more ...host.ExtensionFunc) *harness {
	t.Helper()
	return newHarnessOpts(t, rounds, func(o *host.Options) { o.Extensions = append(o.Extensions, more...) })
}

// newHarnessOpts is newHarness with the host's options edited first.
func newHarnessOpts(t testing.TB, rounds string, edit func(*host.Options)) *harness {
	t.Helper()
	return newHarnessAPI(t, rounds, edit, nil)
}

// newHarnessAPI is newHarnessOpts with the server's options edited too.
func newHarnessAPI(t testing.TB, rounds string, edit func(*host.Options), editAPI func(*httpapi.Options)) *harness {
	t.Helper()
	dbFile := filepath.Join(t.TempDir(), "meka.db")
	db, err := sqlite.Open(t.Context(), dbFile, sqlite.Options{Feed: rowFeed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sc, err := script.Parse([]byte(`{"rounds":` + rounds + `}`))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dbFile: dbFile, db: db, prov: script.New(sc)}
	h.cwd, _ = host.Canonical(t.TempDir())
	hopts := host.Options{
		Store:  db.Sessions(),
		Holder: session.Holder{Token: "serve-test"},
		Profiles: func(name string) (host.Profile, error) {
			if name != "" && name != "test" {
				return host.Profile{}, errors.New("no such profile")
			}
			return host.Profile{Name: "test", Provider: h.prov, ContextWindow: 100000}, nil
		},
		Tools: func(env host.Env) ([]tool.Tool, error) {
			return append(fstool.New(fstool.Options{FS: env.Files}),
				shelltool.New(shelltool.Options{Tasks: env.TaskRegistry, Env: os.Environ()})), nil
		},
		Extensions: []host.ExtensionFunc{func(env host.Env) (host.Extension, error) {
			return checklist.New(checklist.Options{Tasks: env.Tasks, Denied: env.Denied}).Compose(), nil
		}},
		Permissions: host.Permissions{Default: permission.Workspace,
			Enabled: []permission.Level{permission.Read, permission.Workspace, permission.Unrestricted}},
		DataDir: t.TempDir(),
	}
	if edit != nil {
		edit(&hopts)
	}
	h.host, err = host.New(hopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.host.Close(context.Background()) })
	aopts := httpapi.Options{Host: h.host, Feed: sqliteFeed{db.Feed()}, Token: token, Loopback: true,
		Profiles: []string{"test"}, RelayProviderErrors: true}
	if editAPI != nil {
		editAPI(&aopts)
	}
	h.api, err = httpapi.New(aopts)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(h.api)
	t.Cleanup(h.srv.Close)
	h.spec = loadOpenAPI(t)
	return h
}

// do sends a request with the token and checks the response against the
// OpenAPI document; it returns the status and body.
func (h *harness) do(method, path string, body any, hdr ...string) (int, []byte, http.Header) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if h.spec != nil {
		h.spec.check(h.t, method, req.URL.Path, res, b)
	}
	return res.StatusCode, b, res.Header
}

func (h *harness) json(method, path string, body any, want int, out any) {
	h.t.Helper()
	code, b, _ := h.do(method, path, body)
	if code != want {
		h.t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			h.t.Fatal(err)
		}
	}
}

// sseFrame is one frame read off the feed.
type sseFrame struct {
	ID   string
	Type string
	Data map[string]any
}

// stream opens an SSE stream and returns a function reading its next
// frame; it skips comments and the retry line.
func (h *harness) stream(path string, lastID string) func() (sseFrame, bool) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(h.t.Context())
	h.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", h.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		h.t.Fatalf("stream %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	h.t.Cleanup(func() { res.Body.Close() })
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	return func() (sseFrame, bool) {
		var f sseFrame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f.Type != "" {
					return f, true
				}
			case strings.HasPrefix(line, "id: "):
				f.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				f.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				var env struct {
					ID   string         `json:"id"`
					Data map[string]any `json:"data"`
				}
				if err := json.Unmarshal([]byte(line[6:]), &env); err != nil {
					h.t.Errorf("frame data: %v: %s", err, line)
				}
				if env.ID != f.ID {
					h.t.Errorf("frame id %q, envelope id %q", f.ID, env.ID)
				}
				f.Data = env.Data
				if h.spec != nil {
					h.spec.event(h.t, []byte(line[6:]))
				}
			}
		}
		return f, false
	}
}

// openapi checks responses against the API's own OpenAPI document.
type openapi struct {
	doc     map[string]any
	schemas *jsonschema.Compiler
	cache   map[string]*jsonschema.Schema
	paths   []pathRule
}

type pathRule struct {
	re       *regexp.Regexp
	template string
}

func loadOpenAPI(t testing.TB) *openapi {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(httpapi.OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi version %v", doc["openapi"])
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(httpapi.OpenAPI()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("openapi.json", v); err != nil {
		t.Fatal(err)
	}
	o := &openapi{doc: doc, schemas: c, cache: map[string]*jsonschema.Schema{}}
	for tmpl := range doc["paths"].(map[string]any) {
		segs := strings.Split(tmpl, "/")
		for i, seg := range segs {
			if strings.HasPrefix(seg, "{") {
				segs[i] = "[^/]+"
			} else {
				segs[i] = regexp.QuoteMeta(seg)
			}
		}
		o.paths = append(o.paths, pathRule{re: regexp.MustCompile("^" + strings.Join(segs, "/") + "$"), template: tmpl})
	}
	return o
}

func (o *openapi) schema(t testing.TB, ptr string) *jsonschema.Schema {
	if s, ok := o.cache[ptr]; ok {
		return s
	}
	s, err := o.schemas.Compile("openapi.json#" + ptr)
	if err != nil {
		t.Fatalf("compile %s: %v", ptr, err)
	}
	o.cache[ptr] = s
	return s
}

// check fails the test unless the document lists the response's status
// for the operation and its body matches the schema given there.
func (o *openapi) check(t testing.TB, method, path string, res *http.Response, body []byte) {
	t.Helper()
	tmpl := ""
	for _, r := range o.paths {
		if r.re.MatchString(path) && (tmpl == "" || !strings.Contains(r.template, "{")) {
			tmpl = r.template
		}
	}
	if tmpl == "" {
		t.Errorf("openapi: no path matches %s", path)
		return
	}
	op, _ := o.doc["paths"].(map[string]any)[tmpl].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if op == nil {
		t.Errorf("openapi: %s %s is not documented", method, tmpl)
		return
	}
	code := strconv.Itoa(res.StatusCode)
	r, _ := op["responses"].(map[string]any)[code].(map[string]any)
	if r == nil {
		t.Errorf("openapi: %s %s answered %s, which is not documented: %s", method, tmpl, code, body)
		return
	}
	content, _ := r["content"].(map[string]any)
	if content == nil {
		if len(body) > 0 {
			t.Errorf("openapi: %s %s %s has a body the document does not describe", method, tmpl, code)
		}
		return
	}
	ct := res.Header.Get("Content-Type")
	for mt := range content {
		if strings.HasPrefix(ct, mt) {
			if mt == "text/event-stream" || mt == "application/x-ndjson" || strings.HasPrefix(mt, "text/") {
				return // not one JSON document
			}
			ptr := "/paths/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tmpl) + "/" + strings.ToLower(method) + "/responses/" + code + "/content/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(mt) + "/schema"
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
			if err != nil {
				t.Errorf("openapi: %s %s %s: body is not JSON: %s", method, tmpl, code, body)
				return
			}
			if err := o.schema(t, ptr).Validate(inst); err != nil {
				t.Errorf("openapi: %s %s %s: %v\n%s", method, tmpl, code, err, body)
			}
			return
		}
	}
	t.Errorf("openapi: %s %s %s: content type %q not documented", method, tmpl, code, ct)
}

// event checks one feed frame's envelope against the Event schema.
func (o *openapi) event(t testing.TB, b []byte) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err == nil {
		err = o.schema(t, "/components/schemas/Event").Validate(inst)
	}
	if err != nil {
		t.Errorf("openapi: event %s: %v", b, err)
	}
}

func (h *harness) dbPath() string { return h.dbFile }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o644) }
