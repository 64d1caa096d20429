package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/httpapi"
)

// A body is one JSON value: anything after it is refused whole, and
// nothing is created; trailing white space is not data.
func TestBodyTrailingDataRefused(t *testing.T) {
	h := newHarness(t, `[]`)
	post := func(body string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", h.srv.URL+"/v1/sessions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	one := fmt.Sprintf(`{"cwd":%q}`, h.cwd)
	for _, body := range []string{one + "x", one + "{}", one + one, one + ` "more"`, one + "]"} {
		if code, b := post(body); code != http.StatusBadRequest || !strings.Contains(b, `"code":"body-invalid"`) || !strings.Contains(b, "after the JSON value") && !strings.Contains(b, "invalid character") {
			t.Errorf("POST %q: %d %s, want 400 body-invalid", body, code, b)
		}
	}
	var page struct{ Items []sessionRec }
	h.json("GET", "/v1/sessions", nil, http.StatusOK, &page)
	if len(page.Items) != 0 {
		t.Fatalf("the refused bodies created %d sessions", len(page.Items))
	}
	if code, b := post(one + "\n\t "); code != http.StatusCreated {
		t.Errorf("a body with trailing white space: %d %s", code, b)
	}
}

// A body that never completes gets 408 once Options.BodyTimeout has
// passed since the handler began to read it, with or without an
// Idempotency-Key; the connection is not held for ever.
func TestSlowBodyTimesOut(t *testing.T) {
	h := newHarnessAPI(t, `[]`, nil, func(o *httpapi.Options) { o.BodyTimeout = 50 * time.Millisecond })
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	for _, tc := range []struct{ path, extra string }{
		{"/v1/sessions", ""},
		{"/v1/sessions/" + s.ID + "/turns", "Idempotency-Key: k1\r\n"},
	} {
		c, err := net.Dial("tcp", h.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The bound on the test's own wait, far above the server's.
		c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n%sContent-Length: 1000\r\n\r\n{\"cwd\":",
			tc.path, h.srv.Listener.Addr(), token, tc.extra)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: no answer to a body that never ends: %v", tc.path, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), `"code":"body-timeout"`) {
			t.Errorf("%s: %d %s, want 408 body-timeout", tc.path, res.StatusCode, b)
		}
	}
	var page struct{ Items []sessionRec }
	h.json("GET", "/v1/sessions", nil, http.StatusOK, &page)
	if len(page.Items) != 1 || len(h.prov.Requests()) != 0 {
		t.Fatalf("after the slow bodies: %d sessions, %d model requests", len(page.Items), len(h.prov.Requests()))
	}
}
