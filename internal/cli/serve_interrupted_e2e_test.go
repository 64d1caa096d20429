package cli_test

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// A turn meka serve was running when it was killed with SIGKILL is
// finished in the record as soon as the server starts again: the feed
// carries its turn.completed (status interrupted) with no new turn
// opening the session, and GET of the turn answers how it ended.
func TestServeKilledMidTurnFinishesTheTurn(t *testing.T) {
	work, data := t.TempDir(), t.TempDir()
	model := scripted(t, `[
	 {"tool_calls":[{"id":"w1","name":"file_write","arguments":{"path":"a.txt","content":"x"}}]},
	 {"text":"never sent whole","stall":"stream"}]`)
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+model.URL+"/v1", "MEKA_DATA_DIR="+data)
	srv := startServe(t, work, env)
	var rec struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work}, &rec); code != 201 {
		t.Fatalf("create: %d", code)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // bounds every wait below
	defer cancel()
	feed := srv.events(t, ctx, rec.ID, "0")
	var turn struct {
		TurnID string `json:"turn_id"`
	}
	input := map[string]any{"input": []map[string]string{{"type": "text", "text": "write"}}}
	if code := srv.call(t, "POST", "/v1/sessions/"+rec.ID+"/turns", input, &turn); code != 202 {
		t.Fatalf("turn: %d", code)
	}
	// Mid-turn for sure: its tool ran, and the next round never ends.
	last := nextFrame(t, feed, "tool.finished")
	srv.cmd.Process.Signal(syscall.SIGKILL)
	srv.cmd.Wait()
	for f := range feed { // what was on the wire before the kill
		if f.typ == "turn.completed" {
			t.Fatalf("the killed turn ended before the kill: %+v", f)
		}
		last = f
	}

	again := startServe(t, work, env)
	var got struct {
		TurnID string `json:"turn_id"`
		Status string `json:"status"`
		Error  struct {
			Code string `json:"code"`
		} `json:"error"`
		EndedAt string `json:"ended_at"`
	}
	if code := again.call(t, "GET", "/v1/sessions/"+rec.ID+"/turns/"+turn.TurnID, nil, &got); code != 200 ||
		got.TurnID != turn.TurnID || got.Status != "interrupted" || got.Error.Code != "turn-interrupted" || got.EndedAt == "" {
		t.Fatalf("GET the killed turn after the restart: %d %+v", code, got)
	}
	// The feed, resumed where the client stopped, ends the turn; no turn
	// started meanwhile.
	for f := range again.events(t, ctx, rec.ID, last.id) {
		switch f.typ {
		case "turn.started":
			t.Fatalf("a new turn started: %+v", f)
		case "turn.completed":
			if f.turnID != turn.TurnID {
				t.Fatalf("turn.completed of another turn: %+v", f)
			}
			return
		}
	}
	t.Fatal("the feed ended before the killed turn's end")
}
