package sqlite_test

import (
	"errors"
	"path/filepath"
	"testing"

	"meka.dev/meka/internal/sqlite"
)

func TestProjectsAndMemories(t *testing.T) {
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	ps := db.Projects()
	if _, err := ps.Add(ctx, "web", "/srv/web"); err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Add(ctx, "web", ""); !errors.Is(err, sqlite.ErrProjectExists) {
		t.Fatalf("second add: %v", err)
	}
	if _, err := ps.Get(ctx, "nope"); !errors.Is(err, sqlite.ErrNoProject) {
		t.Fatalf("get unknown: %v", err)
	}
	if list, err := ps.List(ctx); err != nil || len(list) != 1 || list[0].Dir != "/srv/web" {
		t.Fatalf("list %v %v", list, err)
	}

	ms := db.Memories()
	a, err := ms.Put(ctx, "web", "", "deploys go through make ship")
	if err != nil || a.ID != "m1" {
		t.Fatalf("put %+v %v", a, err)
	}
	u, _ := ms.Put(ctx, "", "", "the user likes short answers")
	b, _ := ms.Put(ctx, "web", "", "staging is at staging.example")
	if got, _ := ms.List(ctx, "web", 0); len(got) != 2 || got[0].ID != b.ID {
		t.Fatalf("newest first: %+v", got)
	}
	if got, _ := ms.List(ctx, "web", 1); len(got) != 1 {
		t.Fatalf("limit: %+v", got)
	}
	// Scoped: the user's note is not the project's to change.
	if _, err := ms.Put(ctx, "web", u.ID, "x"); !errors.Is(err, sqlite.ErrNoMemory) {
		t.Fatalf("replace across scopes: %v", err)
	}
	r, err := ms.Put(ctx, "web", a.ID, "deploys go through make release")
	if err != nil || r.ID != a.ID || r.Text != "deploys go through make release" {
		t.Fatalf("replace %+v %v", r, err)
	}
	if d, err := ms.Delete(ctx, "web", "M1"); err != nil || d.Text != r.Text {
		t.Fatalf("delete %+v %v", d, err)
	}
	if _, err := ms.Delete(ctx, "web", a.ID); !errors.Is(err, sqlite.ErrNoMemory) {
		t.Fatalf("delete twice: %v", err)
	}
	if _, err := ms.Get(ctx, "", "bogus"); !errors.Is(err, sqlite.ErrNoMemory) {
		t.Fatalf("bad id: %v", err)
	}
}
