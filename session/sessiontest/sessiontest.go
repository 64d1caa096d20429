// Package sessiontest is the conformance suite for session.Store, run
// against every implementation the way testing/slogtest runs against a
// slog.Handler:
//
//	func TestStore(t *testing.T) {
//		sessiontest.Run(t, func(t *testing.T) sessiontest.Opener {
//			path := filepath.Join(t.TempDir(), "meka.db")
//			return func(t *testing.T) session.Store { return openAt(t, path) }
//		})
//	}
//
// It imports session and model only.
package sessiontest

import (
	"errors"
	"regexp"
	"slices"
	"sync"
	"testing"

	"meka.dev/meka/session"
)

// Opener opens a handle on one database. The suite calls it more than once
// per database: after closing a handle, to see what persisted, and while
// another handle is open, to act as a second process. The suite closes
// every store it opens, so an Opener registers no Close of its own.
//
// Stores must stamp times from a clock that advances between calls (a
// real clock does): the listing tests rely on later writes sorting first.
type Opener func(t *testing.T) session.Store

// Run runs the suite. newDB returns an Opener for a fresh, empty database;
// every subtest calls it once.
func Run(t *testing.T, newDB func(t *testing.T) Opener) {
	for _, tc := range []struct {
		name string
		test func(t *testing.T, open Opener)
	}{
		{"CreateGet", testCreateGet},
		{"Prefix", testPrefix},
		{"Update", testUpdate},
		{"Delete", testDelete},
		{"AppendReopen", testAppendReopen},
		{"RoundTrip", testRoundTrip},
		{"Title", testTitle},
		{"Fork", testFork},
		{"Rewind", testRewind},
		{"ConcurrentAppend", testConcurrentAppend},
		{"Restore", testRestore},
		{"List", testList},
		{"Latest", testLatest},
		{"Lock", testLock},
		{"LockOwnToken", testLockOwnToken},
		{"LockReleasedOnClose", testLockReleasedOnClose},
		{"Holders", testHolders},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.test(t, newDB(t))
		})
	}
}

// store opens a handle whose Close the suite may call early; the cleanup
// closes it otherwise.
func store(t *testing.T, open Opener) session.Store {
	t.Helper()
	s := &onceCloser{Store: open(t)}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return s
}

type onceCloser struct {
	session.Store
	once sync.Once
	err  error
}

func (s *onceCloser) Close() error {
	s.once.Do(func() { s.err = s.Store.Close() })
	return s.err
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func testCreateGet(t *testing.T, open Opener) {
	ctx := t.Context()
	s := store(t, open)

	in := session.Meta{
		Title:          "first",
		Cwd:            "/projects/a",
		AdditionalDirs: []string{"/projects/b", "/projects/c"},
		Profile:        "fast",
		Project:        "meka",
		Permission:     "workspace",
	}
	m := mustCreate(t, s, in)
	if !uuidV4.MatchString(m.ID) {
		t.Errorf("Create filled id %q, want a lower-case UUID v4", m.ID)
	}
	if m.CreatedAt.IsZero() || m.UpdatedAt.Before(m.CreatedAt) {
		t.Errorf("Create times: created %v updated %v", m.CreatedAt, m.UpdatedAt)
	}
	want := in
	want.ID, want.CreatedAt, want.UpdatedAt = m.ID, m.CreatedAt, m.UpdatedAt
	checkMeta(t, "Create", m, want)
	got, err := s.Get(ctx, m.ID)
	if err != nil {
		t.Fatalf("Get(%s): %v", m.ID, err)
	}
	checkMeta(t, "Get", got, want)

	other := mustCreate(t, s, session.Meta{Cwd: "/projects/a", Permission: "read"})
	if other.ID == m.ID {
		t.Errorf("two sessions got the same id %s", m.ID)
	}

	const id = "7d1e9c1a-6a3b-4c2d-9e8f-0a1b2c3d4e5f"
	child := mustCreate(t, s, session.Meta{ID: id, Cwd: "/projects/a", ParentID: m.ID, ParentCallID: "call_7", Agent: "reviewer"})
	if child.ID != id || child.ParentID != m.ID {
		t.Errorf("Create with id and parent = %s (parent %q), want %s (parent %s)", child.ID, child.ParentID, id, m.ID)
	}
	if got := mustGet(t, s, id); got.ParentID != m.ID || got.ParentCallID != "call_7" || got.Agent != "reviewer" {
		t.Errorf("Get of a sub-agent's session = parent %q call %q agent %q, want %s call_7 reviewer", got.ParentID, got.ParentCallID, got.Agent, m.ID)
	}
	if _, err := s.Create(ctx, session.Meta{ID: id, Cwd: "/projects/a"}); err == nil {
		t.Errorf("Create with an existing id succeeded")
	}
	if _, err := s.Create(ctx, session.Meta{Cwd: "/projects/a", ParentID: "0e0e0e0e-0e0e-4e0e-8e0e-0e0e0e0e0e0e"}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Create with an unknown parent: %v, want ErrNotFound", err)
	}
}

func testPrefix(t *testing.T, open Opener) {
	ctx := t.Context()
	s := store(t, open)
	ids := []string{
		"0b5c1111-1111-4111-8111-111111111111",
		"0b5c2222-2222-4222-8222-222222222222",
		"0b5d3333-3333-4333-8333-333333333333",
	}
	for _, id := range ids {
		mustCreate(t, s, session.Meta{ID: id, Cwd: "/w"})
	}
	for _, tc := range []struct {
		prefix string
		want   string
		err    error
	}{
		{prefix: ids[0], want: ids[0]},
		{prefix: "0b5c1", want: ids[0]},
		{prefix: "0b5c2222-2", want: ids[1]},
		{prefix: "0b5d", want: ids[2]},
		{prefix: "0b5c", err: session.ErrAmbiguous},
		{prefix: "0b5", err: session.ErrAmbiguous},
		{prefix: "0b5e", err: session.ErrNotFound},
		{prefix: "ffffffff-ffff-4fff-8fff-ffffffffffff", err: session.ErrNotFound},
		{prefix: "", err: session.ErrNotFound},
		{prefix: "%", err: session.ErrNotFound},
	} {
		m, err := s.Get(ctx, tc.prefix)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("Get(%q) = %s, %v; want %v", tc.prefix, m.ID, err, tc.err)
			}
			continue
		}
		if err != nil || m.ID != tc.want {
			t.Errorf("Get(%q) = %s, %v; want %s", tc.prefix, m.ID, err, tc.want)
		}
	}
}

func testUpdate(t *testing.T, open Opener) {
	ctx := t.Context()
	s := store(t, open)
	m := mustCreate(t, s, session.Meta{Cwd: "/w", AdditionalDirs: []string{"/x"}, Profile: "p", Permission: "read"})

	upd := m
	upd.Title, upd.Cwd = "renamed", "/v"
	upd.AdditionalDirs = []string{"/y", "/z"}
	upd.Profile, upd.Project, upd.Permission, upd.Approvals = "q", "proj", "unrestricted", true
	if err := s.Update(ctx, upd); err != nil {
		t.Fatalf("Update: %v", err)
	}
	checkMeta(t, "Get after Update", mustGet(t, s, m.ID), upd)

	upd.AdditionalDirs = nil
	if err := s.Update(ctx, upd); err != nil {
		t.Fatalf("Update: %v", err)
	}
	checkMeta(t, "Get after clearing dirs", mustGet(t, s, m.ID), upd)

	gone := upd
	gone.ID = "0e0e0e0e-0e0e-4e0e-8e0e-0e0e0e0e0e0e"
	if err := s.Update(ctx, gone); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Update of an unknown session: %v, want ErrNotFound", err)
	}
}

func testDelete(t *testing.T, open Opener) {
	ctx := t.Context()
	s := store(t, open)
	m := mustCreate(t, s, session.Meta{Cwd: "/w"})
	keep := mustCreate(t, s, session.Meta{Cwd: "/w"})
	mustAppend(t, s, m.ID, conversation(1)...)
	mustAppend(t, s, keep.ID, conversation(1)...)

	if err := s.Delete(ctx, m.ID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(ctx, m.ID); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	if _, err := s.Rows(ctx, m.ID, 0); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Rows after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, m.ID); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
	if rows := mustRows(t, s, keep.ID, 0); len(rows) != len(conversation(1)) {
		t.Errorf("another session has %d rows after Delete, want %d", len(rows), len(conversation(1)))
	}
}

func mustCreate(t *testing.T, s session.Store, m session.Meta) session.Meta {
	t.Helper()
	m, err := s.Create(t.Context(), m)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return m
}

func mustGet(t *testing.T, s session.Store, id string) session.Meta {
	t.Helper()
	m, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return m
}

// checkMeta compares metas field by field: times by instant, and a nil
// list of directories as an empty one.
func checkMeta(t *testing.T, what string, got, want session.Meta) {
	t.Helper()
	if got.ID != want.ID || got.Title != want.Title || got.Cwd != want.Cwd ||
		got.Profile != want.Profile || got.Project != want.Project ||
		got.Permission != want.Permission || got.ParentID != want.ParentID || got.ParentCallID != want.ParentCallID || got.Agent != want.Agent || got.ForkedAt != want.ForkedAt || got.Approvals != want.Approvals ||
		!slices.Equal(got.AdditionalDirs, want.AdditionalDirs) ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}
