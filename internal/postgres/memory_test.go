package postgres_test

import (
	"errors"
	"testing"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
)

func TestProjectsAndMemories(t *testing.T) {
	ctx := t.Context()
	db := open(t, pgtest.NewDatabase(t), postgres.Options{})
	if _, err := db.Projects().Add(ctx, "shop", "/w/shop"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Projects().Add(ctx, "shop", ""); !errors.Is(err, postgres.ErrProjectExists) {
		t.Errorf("second add: %v", err)
	}
	if _, err := db.Projects().Get(ctx, "nope"); !errors.Is(err, postgres.ErrNoProject) {
		t.Errorf("get unknown: %v", err)
	}
	if ps, err := db.Projects().List(ctx); err != nil || len(ps) != 1 || ps[0].Dir != "/w/shop" {
		t.Errorf("list: %+v %v", ps, err)
	}
	m := db.Memories()
	a, err := m.Put(ctx, "shop", "", "first")
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Put(ctx, "", "", "mine")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(ctx, "", a.ID); !errors.Is(err, postgres.ErrNoMemory) {
		t.Errorf("a project's memory read from the user's scope: %v", err)
	}
	if got, err := m.Put(ctx, "shop", a.ID, "edited"); err != nil || got.Text != "edited" || got.ID != a.ID {
		t.Errorf("edit: %+v %v", got, err)
	}
	if list, err := m.List(ctx, "shop", 0); err != nil || len(list) != 1 || list[0].Text != "edited" {
		t.Errorf("list: %+v %v", list, err)
	}
	if _, err := m.Delete(ctx, "shop", b.ID); !errors.Is(err, postgres.ErrNoMemory) {
		t.Errorf("delete across scopes: %v", err)
	}
	if _, err := m.Delete(ctx, "", b.ID); err != nil {
		t.Errorf("delete: %v", err)
	}
	if list, _ := m.List(ctx, "", 0); len(list) != 0 {
		t.Errorf("after delete: %+v", list)
	}
}
