// Package checkpoint records the files a session's turns change inside its
// writable roots and puts them back: a rewind of the code.
//
// Each root has a shadow git repository in the data directory (as Gemini
// CLI does), which meka writes and reads in-process: a snapshot stats
// only the entries a watcher of the root (inotify) reported since the
// last one, or, where events cannot be trusted, every file (track.go);
// it reads only those a stat cache (path, size, mtime, ctime, inode,
// mode → blob) cannot vouch for, and writes new blobs and trees as git's
// loose objects, so its cost is the files that changed, and no git
// process runs on a turn's path. The
// object store deduplicates content; the root's .gitignore files keep
// build output out, matched as git matches them. Snapshots are taken
// before a turn's first mutating call and after each one, whatever made
// the change (file tools, shell commands, background tasks), so nothing
// has to know in advance which files a command touches. A ledger per
// session (JSON lines) says which trees belong to which turn; pruning,
// oldest points first, brings the stores under MaxBytes and removes the
// objects no kept point reaches. Git itself is needed only once, to
// convert the packed stores an older meka left.
package checkpoint

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Kinds of point.
const (
	// KindBefore is the state before a turn changed anything.
	KindBefore = "before"
	// KindAfter is the state after one of a turn's mutating calls.
	KindAfter = "after"
	// KindRewind is the state a rewind found and replaced: restoring it
	// undoes the rewind.
	KindRewind = "rewind"
	// KindRestored is the state a rewind left.
	KindRestored = "restored"
)

// Options configure a Store.
type Options struct {
	// Dir is where the shadow repositories and ledgers live (the data
	// directory's checkpoints/).
	Dir string
	// Roots are the session's writable roots that are snapshotted.
	Roots []string
	// MaxBytes bounds the stores' size; 0 means no bound.
	MaxBytes int64
	// MaxFileBytes skips (and names) larger files; 0 means 10 MiB.
	MaxFileBytes int64
	// Git is the git program that converts an older meka's stores once;
	// "" means "git" on PATH.
	Git string
	// Now stamps points; nil means time.Now.
	Now func() time.Time
}

// Point is one recorded state of the roots.
type Point struct {
	Seq     int64             `json:"seq"`
	Session string            `json:"session"`
	Turn    int64             `json:"turn"`
	Kind    string            `json:"kind"`
	Time    time.Time         `json:"time"`
	Trees   map[string]string `json:"trees"` // root → tree
	Skipped []string          `json:"skipped,omitempty"`
	Pruned  bool              `json:"pruned,omitempty"`
}

// Store records and restores the states of a session's roots.
type Store struct {
	opts  Options
	mu    sync.Mutex
	repos []*shadow // the roots snapshotted
	other map[string]*shadow
	// bytes is what the stores hold, as last measured plus what this
	// store wrote since; sized says it was measured.
	bytes int64
	sized bool
	// racy is how old a file must be for the stat cache to vouch for it.
	racy time.Duration
}

// Open prepares the shadow repositories of opts.Roots.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("checkpoint: no data directory")
	}
	if opts.Git == "" {
		opts.Git = "git"
	}
	if opts.MaxFileBytes == 0 {
		opts.MaxFileBytes = 10 << 20
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Store{opts: opts, racy: racyWindow}
	for _, r := range opts.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: root %s: %w", r, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("checkpoint: root %s is not a directory", r)
		}
		sh := newShadow(opts.Git, opts.Dir, abs)
		if err := sh.init(ctx); err != nil {
			s.Close()
			return nil, err
		}
		sh.track = newTracked()
		s.repos = append(s.repos, sh)
	}
	return s, nil
}

// Close stops watching the roots; later snapshots scan them whole.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.repos {
		r.track.close()
		r.track = nil
	}
	return nil
}

// repo is the shadow of root, one of opts.Roots or a root a recorded point
// names (a store opened only to rewind has no roots of its own).
func (s *Store) repo(ctx context.Context, root string) (*shadow, error) {
	for _, r := range s.repos {
		if r.root == root {
			return r, nil
		}
	}
	if r, ok := s.other[root]; ok {
		return r, nil
	}
	r := newShadow(s.opts.Git, s.opts.Dir, root)
	if _, err := os.Stat(filepath.Join(r.dir, "HEAD")); err != nil {
		return nil, fmt.Errorf("checkpoint: no checkpoints of %s", root)
	}
	if err := r.packsToLoose(ctx); err != nil {
		return nil, err
	}
	if s.other == nil {
		s.other = map[string]*shadow{}
	}
	s.other[root] = r
	return r, nil
}

// Roots are the directories the store snapshots.
func (s *Store) Roots() []string {
	out := make([]string, len(s.repos))
	for i, r := range s.repos {
		out[i] = r.root
	}
	return out
}

// Snapshot records the roots' current state for session's turn.
func (s *Store) Snapshot(ctx context.Context, sessionID string, turn int64, kind string) (Point, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshot(ctx, sessionID, turn, kind)
}

func (s *Store) snapshot(ctx context.Context, sessionID string, turn int64, kind string) (Point, error) {
	return s.snapshotOf(ctx, s.repos, sessionID, turn, kind)
}

func (s *Store) snapshotOf(ctx context.Context, repos []*shadow, sessionID string, turn int64, kind string) (Point, error) {
	p, err := s.state(repos)
	if err != nil {
		return Point{}, err
	}
	return s.record(ctx, p, sessionID, turn, kind)
}

// record keeps state p as a point of the session.
func (s *Store) record(ctx context.Context, p Point, sessionID string, turn int64, kind string) (Point, error) {
	p.Session, p.Turn, p.Kind, p.Time = sessionID, turn, kind, s.opts.Now().UTC()
	p.Seq = p.Time.UnixNano()
	last, ok, err := s.last(sessionID)
	if err != nil {
		return Point{}, err
	}
	if ok && last.Seq >= p.Seq {
		p.Seq = last.Seq + 1
	}
	if err := s.appendLedger(p); err != nil {
		return Point{}, err
	}
	if err := s.prune(ctx); err != nil {
		return p, err
	}
	return p, nil
}

// state snapshots every root without recording a point.
func (s *Store) state(repos []*shadow) (Point, error) {
	p := Point{Trees: map[string]string{}}
	for _, r := range repos {
		tree, skipped, written, err := r.snapshot(s.opts.MaxFileBytes, s.racy)
		s.bytes += written
		if err != nil {
			return Point{}, err
		}
		p.Trees[r.root] = tree
		for _, sk := range skipped {
			p.Skipped = append(p.Skipped, filepath.Join(r.root, filepath.FromSlash(sk)))
		}
	}
	return p, nil
}

func refName(id string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, id)
}

func (s *Store) ledgerPath(sessionID string) string {
	return filepath.Join(s.opts.Dir, "ledger", refName(sessionID)+".jsonl")
}

func (s *Store) appendLedger(p Point) error {
	path := s.ledgerPath(p.Session)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	b, _ := json.Marshal(p)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// Points lists a session's recorded points, oldest first. A line torn by
// a crash is ignored.
func (s *Store) Points(sessionID string) ([]Point, error) {
	return s.readLedger(s.ledgerPath(sessionID))
}

func (s *Store) readLedger(path string) ([]Point, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	var ps []Point
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var p Point
		if json.Unmarshal(sc.Bytes(), &p) == nil {
			ps = append(ps, p)
		}
	}
	return ps, sc.Err()
}

func (s *Store) last(sessionID string) (Point, bool, error) {
	ps, err := s.Points(sessionID)
	if err != nil || len(ps) == 0 {
		return Point{}, false, err
	}
	return ps[len(ps)-1], true, nil
}

// TurnChanges are the files one turn changed.
type TurnChanges struct {
	Turn    int64
	Changes []Change
	Skipped []string
	Pruned  bool
}

// Turns lists, per turn that changed something, the files it changed:
// from its Before point to the last point of the turn.
func (s *Store) Turns(ctx context.Context, sessionID string) ([]TurnChanges, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, err := s.Points(sessionID)
	if err != nil {
		return nil, err
	}
	var out []TurnChanges
	for i, p := range ps {
		if p.Kind != KindBefore {
			continue
		}
		tc := TurnChanges{Turn: p.Turn, Pruned: p.Pruned, Skipped: p.Skipped}
		end := p
		for _, q := range ps[i+1:] {
			if q.Turn != p.Turn || q.Kind != KindAfter {
				break
			}
			end = q
			tc.Skipped = append(tc.Skipped, q.Skipped...)
		}
		if !p.Pruned && !end.Pruned {
			for _, root := range sortedRoots(p.Trees) {
				r, err := s.repo(ctx, root)
				if err != nil {
					return nil, err
				}
				cs, err := r.diff(p.Trees[root], end.Trees[root])
				if err != nil {
					return nil, err
				}
				tc.Changes = append(tc.Changes, cs...)
			}
		}
		slices.Sort(tc.Skipped)
		tc.Skipped = slices.Compact(tc.Skipped)
		out = append(out, tc)
	}
	return out, nil
}

// ConflictError refuses a rewind: files changed since meka's last
// snapshot, by something other than meka.
type ConflictError struct{ Changes []Change }

func (e *ConflictError) Error() string {
	var names []string
	for _, c := range e.Changes {
		names = append(names, c.Path+" ("+c.Op+")")
	}
	return "checkpoint: changed outside meka since its last checkpoint: " + strings.Join(names, ", ") + "; rewind with --force to overwrite"
}

// PrunedError refuses a rewind past what pruning kept.
type PrunedError struct{ Turn, Oldest int64 }

func (e *PrunedError) Error() string {
	if e.Oldest < 0 {
		return fmt.Sprintf("checkpoint: turn %d's files were pruned ([checkpoints] max_bytes) and no checkpoint is kept", e.Turn)
	}
	return fmt.Sprintf("checkpoint: turn %d's files were pruned ([checkpoints] max_bytes); the oldest turn that can be rewound is %d", e.Turn, e.Oldest)
}

// RestoreOptions say how to rewind.
type RestoreOptions struct {
	// Force overwrites files changed outside meka since its last snapshot.
	Force bool
	// Turn labels the points the rewind records (the session's current turn).
	Turn int64
}

// Result is what a rewind did.
type Result struct {
	// Changes take the roots from the state found to the state restored.
	Changes []Change
	// Undo is the point recording the state found: RestorePoint(Undo.Seq)
	// undoes the rewind.
	Undo Point
}

// Rewind puts the roots back as they were before turn changed anything.
// A turn that changed nothing leaves the state of the next turn that did,
// or of now.
func (s *Store) Rewind(ctx context.Context, sessionID string, turn int64, o RestoreOptions) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, err := s.Points(sessionID)
	if err != nil {
		return Result{}, err
	}
	// Pruning drops the oldest points first, so the first Before point at
	// or after turn decides: pruned, the rewind would cross what is gone.
	oldest := int64(-1)
	for _, p := range ps {
		if p.Kind == KindBefore && !p.Pruned {
			oldest = p.Turn
			break
		}
	}
	// Walking back from the newest, the target is the earliest Before
	// point of the run of turns from turn on: a conversation rewound
	// before may have numbered turns again.
	var target *Point
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].Kind != KindBefore {
			continue
		}
		if ps[i].Turn < turn {
			break
		}
		target = &ps[i]
	}
	if target == nil {
		return Result{}, nil // nothing changed since turn
	}
	if target.Pruned {
		return Result{}, &PrunedError{Turn: turn, Oldest: oldest}
	}
	return s.restore(ctx, sessionID, *target, o)
}

// RestorePoint puts the roots back to a recorded point, such as a
// rewind's Undo.
func (s *Store) RestorePoint(ctx context.Context, sessionID string, seq int64, o RestoreOptions) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, err := s.Points(sessionID)
	if err != nil {
		return Result{}, err
	}
	for _, p := range ps {
		if p.Seq == seq {
			if p.Pruned {
				return Result{}, &PrunedError{Turn: p.Turn, Oldest: -1}
			}
			return s.restore(ctx, sessionID, p, o)
		}
	}
	return Result{}, fmt.Errorf("checkpoint: session %s has no checkpoint %d", sessionID, seq)
}

func (s *Store) restore(ctx context.Context, sessionID string, target Point, o RestoreOptions) (Result, error) {
	ps, err := s.Points(sessionID)
	if err != nil {
		return Result{}, err
	}
	known := ps[len(ps)-1]
	var repos []*shadow
	for _, root := range sortedRoots(target.Trees) {
		r, err := s.repo(ctx, root)
		if err != nil {
			return Result{}, err
		}
		repos = append(repos, r)
	}
	now, err := s.state(repos)
	if err != nil {
		return Result{}, err
	}
	var res Result
	if !o.Force && !known.Pruned {
		var outside []Change
		for _, r := range repos {
			kt, ok := known.Trees[r.root]
			if !ok {
				continue
			}
			cs, err := r.diff(kt, now.Trees[r.root])
			if err != nil {
				return Result{}, err
			}
			outside = append(outside, cs...)
		}
		if len(outside) > 0 {
			return Result{}, &ConflictError{Changes: outside}
		}
	}
	// The state just read is the one the rewind replaces: no second scan.
	undo, err := s.record(ctx, now, sessionID, o.Turn, KindRewind)
	if err != nil {
		return Result{}, err
	}
	res.Undo = undo
	for _, r := range repos {
		tree := target.Trees[r.root]
		cs, err := r.diff(undo.Trees[r.root], tree)
		if err != nil {
			return Result{}, err
		}
		res.Changes = append(res.Changes, cs...)
		if len(cs) == 0 {
			continue
		}
		from, _ := parseOID(undo.Trees[r.root])
		to, _ := parseOID(tree)
		if err := checkout(r.objs, r.root, from, to); err != nil {
			return res, err
		}
	}
	// Only the files that differ were written: the root is now the
	// target's tree, with nothing to scan.
	restored := Point{Trees: map[string]string{}}
	for _, r := range repos {
		restored.Trees[r.root] = target.Trees[r.root]
	}
	if _, err := s.record(ctx, restored, sessionID, o.Turn, KindRestored); err != nil {
		return res, err
	}
	return res, nil
}

func sortedRoots(trees map[string]string) []string {
	out := make([]string, 0, len(trees))
	for r := range trees {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// Prune drops the oldest points, across every session in the data
// directory, until the stores fit MaxBytes.
func (s *Store) Prune(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prune(ctx)
}

func (s *Store) prune(ctx context.Context) error {
	if s.opts.MaxBytes <= 0 {
		return nil
	}
	// The stores are measured once, then counted as they grow; over the
	// bound they are measured again (another process may have pruned)
	// before anything is dropped.
	if !s.sized || s.bytes > s.opts.MaxBytes {
		total, err := s.size()
		if err != nil {
			return err
		}
		s.bytes, s.sized = total, true
	}
	if s.bytes <= s.opts.MaxBytes {
		return nil
	}
	ledgers, _ := filepath.Glob(filepath.Join(s.opts.Dir, "ledger", "*.jsonl"))
	type entry struct {
		path string
		i    int
	}
	all := map[string][]Point{}
	var order []entry
	for _, l := range ledgers {
		ps, err := s.readLedger(l)
		if err != nil {
			return err
		}
		all[l] = ps
		for i, p := range ps {
			if !p.Pruned {
				order = append(order, entry{l, i})
			}
		}
	}
	sort.Slice(order, func(a, b int) bool {
		return all[order[a].path][order[a].i].Seq < all[order[b].path][order[b].i].Seq
	})
	// Drop the oldest quarter at a time: a sweep of the store is the
	// cost, so it runs a few times at most. The newest point of each
	// session is kept.
	for len(order) > 0 && s.bytes > s.opts.MaxBytes {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := max(1, len(order)/4)
		dropped := 0
		for _, e := range order[:n] {
			ps := all[e.path]
			if e.i == len(ps)-1 {
				continue
			}
			ps[e.i].Pruned = true
			dropped++
		}
		order = order[n:]
		// The ledgers first: a point marked pruned before its objects go
		// is refused, never restored half.
		for path, ps := range all {
			if err := writeLedger(path, ps); err != nil {
				return err
			}
		}
		var total int64
		for _, r := range s.repos {
			var kept []string
			for _, ps := range all {
				for _, p := range ps {
					if t, ok := p.Trees[r.root]; ok && !p.Pruned {
						kept = append(kept, t)
					}
				}
			}
			n, err := r.prune(kept)
			if err != nil {
				return err
			}
			total += n
		}
		s.bytes = total
		if dropped == 0 {
			break
		}
	}
	return nil
}

func writeLedger(path string, ps []Point) error {
	var b []byte
	for _, p := range ps {
		j, _ := json.Marshal(p)
		b = append(append(b, j...), '\n')
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

func (s *Store) size() (int64, error) {
	var total int64
	for _, r := range s.repos {
		n, err := r.size()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// Export writes root's files as they were after turn keep of the session
// into dest (a fork's new directory); the root itself is not touched.
func (s *Store) Export(ctx context.Context, sessionID string, keep int64, root, dest string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, err := s.Points(sessionID)
	if err != nil {
		return err
	}
	if len(ps) == 0 {
		return fmt.Errorf("checkpoint: session %s has no checkpoints", sessionID)
	}
	// As in Rewind: the earliest Before point of the last run of turns
	// after keep, else the newest state.
	target := ps[len(ps)-1]
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].Kind != KindBefore {
			continue
		}
		if ps[i].Turn <= keep {
			break
		}
		target = ps[i]
	}
	if target.Pruned {
		return &PrunedError{Turn: keep + 1, Oldest: -1}
	}
	tree, ok := target.Trees[root]
	if !ok {
		return fmt.Errorf("checkpoint: no checkpoints of %s", root)
	}
	r, err := s.repo(ctx, root)
	if err != nil {
		return err
	}
	to, err := parseOID(tree)
	if err != nil {
		return err
	}
	dest, err = filepath.Abs(dest)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return checkout(r.objs, filepath.Clean(dest), oid{}, to)
}
