package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/httpapi"
	"meka.dev/meka/internal/memory"
	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/schedule/pgstore"
	"meka.dev/meka/internal/schedule/sqlitestore"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/session"
)

// database is the store every subcommand works on: the SQLite file in
// the data directory, or a PostgreSQL database shared by hosts on several
// machines ([store] url, $MEKA_DATABASE_URL). Nothing past this file
// knows which.
type database struct {
	sessions  session.Store
	schedules schedule.Store
	// leaseClock is the clock a scheduler judges due occurrences and its
	// leases by: the server's for PostgreSQL, so that hosts with skewed
	// clocks agree; nil means the process's.
	leaseClock func() time.Time
	// wake, when set, watches for jobs created by other hosts.
	wake func(ctx context.Context) <-chan struct{}
	// feed is the durable event feed meka serve streams; nil for a store
	// that keeps none.
	feed   httpapi.FeedStore
	outbox httpapi.Outbox
	// projects and memories: names sessions can be on, and their notes.
	projects projectStore
	memories memory.Store
	close    func() error
}

// project is a project as the commands show it.
type project struct{ Name, Dir string }

// projectStore is the project table of either store.
type projectStore interface {
	Add(ctx context.Context, name, dir string) error
	// Get fails (wrapping the store's "no such project") for an unknown
	// name.
	Get(ctx context.Context, name string) error
	List(ctx context.Context) ([]project, error)
}

func (d *database) Sessions() session.Store   { return d.sessions }
func (d *database) Schedules() schedule.Store { return d.schedules }
func (d *database) Close() error              { return d.close() }

// storeURL is the PostgreSQL database configured, "" for SQLite:
// $MEKA_DATABASE_URL over [store] url.
func (g *globals) storeURL(cfg *config.Config) (string, error) {
	if u := g.getenv("MEKA_DATABASE_URL"); u != "" {
		if err := config.CheckStoreURL(u); err != nil {
			return "", usageError("$MEKA_DATABASE_URL: %v", err)
		}
		return u, nil
	}
	if cfg == nil {
		c, err := g.loadConfig()
		if err != nil {
			return "", err
		}
		cfg = c
	}
	return cfg.Store.URL, nil
}

// openDB opens the configured database; cfg nil reads the config.
func (g *globals) openDB(ctx context.Context, cfg *config.Config) (*database, error) {
	url, err := g.storeURL(cfg)
	if err != nil {
		return nil, err
	}
	if url != "" {
		return openPostgres(ctx, url, postgres.Options{Logger: g.logger(), Feed: pgRowFeed})
	}
	dir, err := g.dataDirectory()
	if err != nil {
		return nil, err
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "meka.db"), sqlite.Options{Logger: g.logger(), Feed: rowFeed})
	if err != nil {
		return nil, &exitError{code: 1, err: err}
	}
	return sqliteDatabase(db), nil
}

// sqliteDatabase wraps an open SQLite file.
func sqliteDatabase(db *sqlite.DB) *database {
	return &database{sessions: db.Sessions(), schedules: sqlitestore.New(db.Schedules()), feed: sqliteFeed{db.Feed()}, outbox: sqliteOutbox{db.Outbox()},
		projects: sqliteProjects{db.Projects()}, memories: memoryStore{db.Memories()}, close: db.Close}
}

// rowFeed stores the events appended rows cause (httpapi.RowEvents) with
// the rows, in every process, so meka serve's feed misses no row whoever
// wrote it.
func rowFeed(sessionID string, rows []session.Row) []sqlite.FeedEntry {
	es := httpapi.RowEvents(sessionID, rows)
	out := make([]sqlite.FeedEntry, len(es))
	for i, e := range es {
		out[i] = sqlite.FeedEntry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}
	}
	return out
}

// sqliteFeed adapts the SQLite feed to httpapi.FeedStore.
type sqliteFeed struct{ f *sqlite.Feed }

func (s sqliteFeed) Append(ctx context.Context, entries []httpapi.Entry) ([]httpapi.Event, error) {
	in := make([]sqlite.FeedEntry, len(entries))
	for i, e := range entries {
		in[i] = sqlite.FeedEntry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}
	}
	evs, err := s.f.Append(ctx, in)
	return feedEvents(evs), err
}

func (s sqliteFeed) After(ctx context.Context, after int64, sessionID string, limit int) ([]httpapi.Event, error) {
	evs, err := s.f.After(ctx, after, sessionID, limit)
	return feedEvents(evs), err
}

func (s sqliteFeed) Bounds(ctx context.Context) (int64, int64, error) { return s.f.Bounds(ctx) }
func (s sqliteFeed) Changed() <-chan struct{}                         { return s.f.Changed() }

func feedEvents(evs []sqlite.FeedEvent) []httpapi.Event {
	out := make([]httpapi.Event, len(evs))
	for i, e := range evs {
		out[i] = httpapi.Event{ID: e.ID, Entry: httpapi.Entry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}, Time: e.Time}
	}
	return out
}

func openPostgres(ctx context.Context, url string, opts postgres.Options) (*database, error) {
	db, err := postgres.Open(ctx, url, opts)
	if err != nil {
		return nil, &exitError{code: 1, err: err}
	}
	return &database{
		sessions:   db.Sessions(),
		schedules:  pgstore.New(db.Schedules()),
		leaseClock: db.Now,
		wake:       db.WatchJobs,
		feed:       pgFeed{db.Feed()},
		outbox:     pgOutbox{db.Outbox()},
		projects:   pgProjects{db.Projects()},
		memories:   pgMemoryStore{db.Memories()},
		close:      db.Close,
	}, nil
}

// pgRowFeed is rowFeed for the PostgreSQL store.
func pgRowFeed(sessionID string, rows []session.Row) []postgres.FeedEntry {
	es := httpapi.RowEvents(sessionID, rows)
	out := make([]postgres.FeedEntry, len(es))
	for i, e := range es {
		out[i] = postgres.FeedEntry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}
	}
	return out
}

// pgFeed adapts the PostgreSQL feed to httpapi.FeedStore.
type pgFeed struct{ f *postgres.Feed }

func (s pgFeed) Append(ctx context.Context, entries []httpapi.Entry) ([]httpapi.Event, error) {
	in := make([]postgres.FeedEntry, len(entries))
	for i, e := range entries {
		in[i] = postgres.FeedEntry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}
	}
	evs, err := s.f.Append(ctx, in)
	return pgFeedEvents(evs), err
}

func (s pgFeed) After(ctx context.Context, after int64, sessionID string, limit int) ([]httpapi.Event, error) {
	evs, err := s.f.After(ctx, after, sessionID, limit)
	return pgFeedEvents(evs), err
}

func (s pgFeed) Bounds(ctx context.Context) (int64, int64, error) { return s.f.Bounds(ctx) }
func (s pgFeed) Changed() <-chan struct{}                         { return s.f.Changed() }

func pgFeedEvents(evs []postgres.FeedEvent) []httpapi.Event {
	out := make([]httpapi.Event, len(evs))
	for i, e := range evs {
		out[i] = httpapi.Event{ID: e.ID, Entry: httpapi.Entry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}, Time: e.Time}
	}
	return out
}

// sqliteOutbox adapts the SQLite webhook outbox to httpapi.Outbox.
type sqliteOutbox struct{ o *sqlite.Outbox }

func (s sqliteOutbox) Fill(ctx context.Context, endpoint string, types []string, now time.Time, limit int) (int, error) {
	return s.o.Fill(ctx, endpoint, types, now, limit)
}

func (s sqliteOutbox) Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]httpapi.Delivery, error) {
	ds, err := s.o.Claim(ctx, owner, now, lease, limit)
	out := make([]httpapi.Delivery, len(ds))
	for i, d := range ds {
		e := d.Event
		out[i] = httpapi.Delivery{ID: d.ID, Endpoint: d.Endpoint, Attempt: d.Attempt,
			Event: httpapi.Event{ID: e.ID, Entry: httpapi.Entry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}, Time: e.Time}}
	}
	return out, err
}

func (s sqliteOutbox) Settle(ctx context.Context, id int64, owner, status string, attempt int, next time.Time, lastError string) (bool, error) {
	return s.o.Settle(ctx, id, owner, status, attempt, next, lastError)
}

func (s sqliteOutbox) Disable(ctx context.Context, endpoint string) error {
	return s.o.Disable(ctx, endpoint)
}

// pgOutbox adapts the PostgreSQL webhook outbox to httpapi.Outbox.
type pgOutbox struct{ o *postgres.Outbox }

func (s pgOutbox) Fill(ctx context.Context, endpoint string, types []string, now time.Time, limit int) (int, error) {
	return s.o.Fill(ctx, endpoint, types, now, limit)
}

func (s pgOutbox) Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]httpapi.Delivery, error) {
	ds, err := s.o.Claim(ctx, owner, now, lease, limit)
	out := make([]httpapi.Delivery, len(ds))
	for i, d := range ds {
		e := d.Event
		out[i] = httpapi.Delivery{ID: d.ID, Endpoint: d.Endpoint, Attempt: d.Attempt,
			Event: httpapi.Event{ID: e.ID, Entry: httpapi.Entry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}, Time: e.Time}}
	}
	return out, err
}

func (s pgOutbox) Settle(ctx context.Context, id int64, owner, status string, attempt int, next time.Time, lastError string) (bool, error) {
	return s.o.Settle(ctx, id, owner, status, attempt, next, lastError)
}

func (s pgOutbox) Disable(ctx context.Context, endpoint string) error {
	return s.o.Disable(ctx, endpoint)
}

// sqliteProjects adapts the SQLite projects to projectStore.
type sqliteProjects struct{ p *sqlite.Projects }

func (s sqliteProjects) Add(ctx context.Context, name, dir string) error {
	_, err := s.p.Add(ctx, name, dir)
	return err
}

func (s sqliteProjects) Get(ctx context.Context, name string) error {
	_, err := s.p.Get(ctx, name)
	return err
}

func (s sqliteProjects) List(ctx context.Context) ([]project, error) {
	ps, err := s.p.List(ctx)
	out := make([]project, len(ps))
	for i, p := range ps {
		out[i] = project{p.Name, p.Dir}
	}
	return out, err
}

// pgProjects adapts the PostgreSQL projects to projectStore.
type pgProjects struct{ p *postgres.Projects }

func (s pgProjects) Add(ctx context.Context, name, dir string) error {
	_, err := s.p.Add(ctx, name, dir)
	return err
}

func (s pgProjects) Get(ctx context.Context, name string) error {
	_, err := s.p.Get(ctx, name)
	return err
}

func (s pgProjects) List(ctx context.Context) ([]project, error) {
	ps, err := s.p.List(ctx)
	out := make([]project, len(ps))
	for i, p := range ps {
		out[i] = project{p.Name, p.Dir}
	}
	return out, err
}

// pgMemoryStore adapts the PostgreSQL memories to memory.Store.
type pgMemoryStore struct{ m *postgres.Memories }

func pgNote(m postgres.Memory) memory.Note {
	return memory.Note{ID: m.ID, Text: m.Text, Updated: m.UpdatedAt}
}

func pgNoteErr(err error) error {
	if errors.Is(err, postgres.ErrNoMemory) {
		return fmt.Errorf("%w: %w", memory.ErrNotFound, err)
	}
	return err
}

func (s pgMemoryStore) List(ctx context.Context, scope string, limit int) ([]memory.Note, error) {
	ms, err := s.m.List(ctx, scope, limit)
	out := make([]memory.Note, len(ms))
	for i, m := range ms {
		out[i] = pgNote(m)
	}
	return out, err
}

func (s pgMemoryStore) Get(ctx context.Context, scope, id string) (memory.Note, error) {
	m, err := s.m.Get(ctx, scope, id)
	return pgNote(m), pgNoteErr(err)
}

func (s pgMemoryStore) Put(ctx context.Context, scope, id, text string) (memory.Note, error) {
	m, err := s.m.Put(ctx, scope, id, text)
	return pgNote(m), pgNoteErr(err)
}

func (s pgMemoryStore) Delete(ctx context.Context, scope, id string) (memory.Note, error) {
	m, err := s.m.Delete(ctx, scope, id)
	return pgNote(m), pgNoteErr(err)
}
