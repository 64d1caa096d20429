package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"meka.dev/meka/internal/httpapi"
	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/schedule/sqlitestore"
)

// The schedule endpoints: a job created as schedule_create would, listed
// with withheld when the session's level cannot fire it, cancelled by id;
// refused with 422 when scheduling is disabled, whose list and delete
// keep working.
func TestScheduleEndpoints(t *testing.T) {
	h := newHarness(t, `[]`)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)

	// Disabled: create is refused, the list answers.
	if code, b, _ := h.do("POST", "/v1/sessions/"+s.ID+"/schedule", map[string]any{"prompt": "tick", "every": "1h"}); code != 422 || !strings.Contains(string(b), "scheduling-disabled") {
		t.Fatalf("create while disabled: %d %s", code, b)
	}
	h.json("GET", "/v1/schedule", nil, http.StatusOK, nil)

	sched, err := schedule.New(schedule.Options{Store: sqlitestore.New(h.db.Schedules())})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(httpapi.Options{Host: h.host, Feed: sqliteFeed{h.db.Feed()}, Token: token, Loopback: true,
		Profiles: []string{"test"}, Schedules: sched})
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(api)
	t.Cleanup(h.srv.Close)

	var job struct {
		ID            string `json:"id"`
		NextFireLocal string `json:"next_fire_local"`
		Withheld      string `json:"withheld"`
	}
	h.json("POST", "/v1/sessions/"+s.ID+"/schedule", map[string]any{"prompt": "check the build", "every": "30m"}, http.StatusCreated, &job)
	if job.ID == "" || job.NextFireLocal == "" || job.Withheld != "" {
		t.Fatalf("job %+v", job)
	}
	if code, b, _ := h.do("POST", "/v1/sessions/"+s.ID+"/schedule", map[string]any{"prompt": "x", "cron": "0 0 31 2 *"}); code != 422 || !strings.Contains(string(b), "schedule-invalid") {
		t.Fatalf("impossible cron: %d %s", code, b)
	}
	if code, b, _ := h.do("POST", "/v1/sessions/"+s.ID+"/schedule", map[string]any{"prompt": "x", "every": "1h",
		"gate": map[string]any{"check": map[string]any{"command": "true"}, "when": "changed"}}); code != 422 || !strings.Contains(string(b), "unrestricted") {
		t.Fatalf("a command gate at workspace: %d %s", code, b)
	}

	// At none, the job is withheld and says why.
	h.json("PATCH", "/v1/sessions/"+s.ID, map[string]any{"permission": "read"}, http.StatusOK, nil)
	var list struct {
		Items []struct {
			ID       string `json:"id"`
			Withheld string `json:"withheld"`
		}
	}
	h.json("GET", "/v1/sessions/"+s.ID+"/schedule", nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].ID != job.ID {
		t.Fatalf("list %+v", list)
	}
	h.json("GET", "/v1/schedule?session="+s.ID, nil, http.StatusOK, &list)
	if len(list.Items) != 1 {
		t.Fatalf("global list %+v", list)
	}

	if code, _, _ := h.do("DELETE", "/v1/schedule/"+job.ID, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code, _, _ := h.do("DELETE", "/v1/schedule/"+job.ID, nil); code != http.StatusNotFound {
		t.Fatalf("second delete: %d", code)
	}
	// Tasks: none running, the list is well formed.
	h.json("GET", "/v1/tasks", nil, http.StatusOK, nil)
}
