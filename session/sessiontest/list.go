package sessiontest

import (
	"errors"
	"slices"
	"testing"

	"meka.dev/meka/session"
)

// listAll pages through a listing and fails on a page larger than asked
// for, a duplicate, or an order other than newest updated first.
func listAll(t *testing.T, s session.Store, opts session.ListOptions) (ids []string, pages []int) {
	t.Helper()
	seen := make(map[string]bool)
	var last *session.Meta
	for range 1000 {
		page, err := s.List(t.Context(), opts)
		if err != nil {
			t.Fatalf("List(%+v): %v", opts, err)
		}
		if opts.Limit > 0 && len(page.Sessions) > opts.Limit {
			t.Fatalf("List returned %d sessions, limit %d", len(page.Sessions), opts.Limit)
		}
		pages = append(pages, len(page.Sessions))
		for _, m := range page.Sessions {
			if seen[m.ID] {
				t.Errorf("List returned %s twice", m.ID)
			}
			seen[m.ID] = true
			if last != nil && m.UpdatedAt.After(last.UpdatedAt) {
				t.Errorf("List put %s (updated %v) after %s (updated %v)", m.ID, m.UpdatedAt, last.ID, last.UpdatedAt)
			}
			last = &m
			ids = append(ids, m.ID)
		}
		if page.Next == "" {
			return ids, pages
		}
		opts.Cursor = page.Next
	}
	t.Fatalf("List never reached its last page")
	return nil, nil
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func testList(t *testing.T, open Opener) {
	ctx := t.Context()
	s := store(t, open)
	const cwdA, cwdB = "/projects/a", "/projects/b"

	var inA, inB, children []string
	for i := range 25 {
		m := mustCreate(t, s, session.Meta{Cwd: cwdA})
		mustAppend(t, s, m.ID, conversation(1)...)
		inA = append(inA, m.ID)
		if i%5 == 0 {
			m := mustCreate(t, s, session.Meta{Cwd: cwdB})
			inB = append(inB, m.ID)
		}
	}
	for range 3 {
		m := mustCreate(t, s, session.Meta{Cwd: cwdA, ParentID: inA[0]})
		children = append(children, m.ID)
	}

	ids, pages := listAll(t, s, session.ListOptions{Cwd: cwdA, Limit: 10})
	if !slices.Equal(pages, []int{10, 10, 5}) {
		t.Errorf("pages of cwd %s have %v sessions, want [10 10 5]", cwdA, pages)
	}
	if !sameSet(ids, inA) {
		t.Errorf("listing of %s = %v, want %v", cwdA, ids, inA)
	}
	// Sessions were appended to in creation order, so the listing runs
	// backwards through them.
	want := slices.Clone(inA)
	slices.Reverse(want)
	if !slices.Equal(ids, want) {
		t.Errorf("listing of %s is not newest updated first:\n got %v\nwant %v", cwdA, ids, want)
	}

	ids, _ = listAll(t, s, session.ListOptions{Cwd: cwdB, Limit: 2})
	if !sameSet(ids, inB) {
		t.Errorf("listing of %s = %v, want %v", cwdB, ids, inB)
	}
	ids, pages = listAll(t, s, session.ListOptions{})
	if !sameSet(ids, append(slices.Clone(inA), inB...)) || len(pages) != 1 {
		t.Errorf("default listing = %d sessions in pages %v, want the %d top-level ones on one page", len(ids), pages, len(inA)+len(inB))
	}
	cousin := mustCreate(t, s, session.Meta{Cwd: cwdA, ParentID: inA[1]})
	ids, _ = listAll(t, s, session.ListOptions{Parent: inA[0], Limit: 2})
	if !sameSet(ids, children) {
		t.Errorf("listing of %s's children = %v, want %v", inA[0], ids, children)
	}
	if page, err := s.List(ctx, session.ListOptions{Parent: inB[0]}); err != nil || len(page.Sessions) != 0 {
		t.Errorf("listing of a childless session's children = %+v, %v; want none", page, err)
	}
	children = append(children, cousin.ID)
	ids, _ = listAll(t, s, session.ListOptions{Cwd: cwdA, Limit: 7, SubAgents: true})
	if !sameSet(ids, append(slices.Clone(inA), children...)) {
		t.Errorf("listing with sub-agents = %v, want %v and %v", ids, inA, children)
	}

	// A session created between pages is not a reason to repeat or skip
	// any of those that were there.
	first, err := s.List(ctx, session.ListOptions{Cwd: cwdA, Limit: 10})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	mustCreate(t, s, session.Meta{Cwd: cwdA})
	rest, _ := listAll(t, s, session.ListOptions{Cwd: cwdA, Limit: 10, Cursor: first.Next})
	var firstIDs []string
	for _, m := range first.Sessions {
		firstIDs = append(firstIDs, m.ID)
	}
	if got := append(firstIDs, rest...); !sameSet(got, inA) {
		t.Errorf("listing with an insert between pages = %v, want %v", got, inA)
	}

	// Appending moves a session to the front.
	mustAppend(t, s, inA[0], conversation(2)...)
	page, err := s.List(ctx, session.ListOptions{Cwd: cwdA, Limit: 1})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(page.Sessions) != 1 || page.Sessions[0].ID != inA[0] {
		t.Errorf("after an append to %s, List starts with %v", inA[0], page.Sessions)
	}

	if _, err := s.List(ctx, session.ListOptions{Cursor: "not a cursor"}); err == nil {
		t.Errorf("List with a made-up cursor succeeded")
	}
	if page, err := s.List(ctx, session.ListOptions{Cwd: "/nowhere"}); err != nil || len(page.Sessions) != 0 || page.Next != "" {
		t.Errorf("List of an empty cwd = %+v, %v", page, err)
	}
}

func testLatest(t *testing.T, open Opener) {
	ctx := t.Context()
	s := store(t, open)
	const cwd = "/projects/latest"
	var ms []session.Meta
	for range 3 {
		ms = append(ms, mustCreate(t, s, session.Meta{Cwd: cwd}))
	}
	mustCreate(t, s, session.Meta{Cwd: "/projects/elsewhere"})
	got, err := s.Latest(ctx, cwd)
	if err != nil || got.ID != ms[2].ID {
		t.Errorf("Latest = %s, %v; want the newest, %s", got.ID, err, ms[2].ID)
	}
	mustAppend(t, s, ms[1].ID, conversation(1)...)
	mustCreate(t, s, session.Meta{Cwd: cwd, ParentID: ms[0].ID})
	got, err = s.Latest(ctx, cwd)
	if err != nil || got.ID != ms[1].ID {
		t.Errorf("Latest after an append and a sub-agent = %s, %v; want the one appended to, %s", got.ID, err, ms[1].ID)
	}
	if _, err := s.Latest(ctx, "/projects/none"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Latest of an empty cwd: %v, want ErrNotFound", err)
	}
}
