package cli

import (
	"context"
	"path/filepath"
	"time"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/events"
	"meka.dev/meka/internal/httpapi"
	"meka.dev/meka/internal/httpapi/web"
	"meka.dev/meka/internal/memory"
	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/schedule/pgstore"
	"meka.dev/meka/internal/schedule/sqlitestore"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/internal/stats"
	"meka.dev/meka/internal/storerec"
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
	// spend adds up the tokens and cost the log records.
	spend stats.Source
	// logins keeps the web app's browser sessions across restarts.
	logins web.LoginStore
	close  func() error
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
		return openPostgres(ctx, url, postgres.Options{Logger: g.logger(), Feed: rowFeed})
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
	return &database{sessions: db.Sessions(), schedules: sqlitestore.New(db.Schedules()), feed: feedStore{db.Feed()}, outbox: outboxStore{db.Outbox()},
		projects: projects{db.Projects()}, memories: memoryStore{db.Memories()}, spend: db, logins: db.Logins(), close: db.Close}
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
		feed:       feedStore{db.Feed()},
		outbox:     outboxStore{db.Outbox()},
		projects:   projects{db.Projects()},
		memories:   memoryStore{db.Memories()},
		spend:      db,
		logins:     db.Logins(),
		close:      db.Close,
	}, nil
}

// The stores below name the records of internal/storerec, so one adapter
// of each kind serves both databases.

// rowFeed stores the events appended rows cause (events.FromRows) with
// the rows, in every process, so meka serve's feed misses no row whoever
// wrote it.
func rowFeed(sessionID string, rows []session.Row) []storerec.FeedEntry {
	es := events.FromRows(sessionID, rows)
	out := make([]storerec.FeedEntry, len(es))
	for i, e := range es {
		out[i] = storerec.FeedEntry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}
	}
	return out
}

// feedStore adapts either store's feed to httpapi.FeedStore.
type feedStore struct {
	f interface {
		Append(ctx context.Context, entries []storerec.FeedEntry) ([]storerec.FeedEvent, error)
		After(ctx context.Context, after int64, sessionID string, limit int) ([]storerec.FeedEvent, error)
		Before(ctx context.Context, before int64, sessionID string, limit int) ([]storerec.FeedEvent, error)
		Bounds(ctx context.Context) (oldest, newest int64, err error)
		Unfinished(ctx context.Context) ([]storerec.FeedEvent, error)
		TurnEvents(ctx context.Context, sessionID, turnID string) ([]storerec.FeedEvent, error)
		Changed() <-chan struct{}
		Prune(ctx context.Context, before time.Time) (int64, error)
	}
}

func (s feedStore) Unfinished(ctx context.Context) ([]httpapi.Event, error) {
	evs, err := s.f.Unfinished(ctx)
	return feedEvents(evs), err
}

func (s feedStore) TurnEvents(ctx context.Context, sessionID, turnID string) ([]httpapi.Event, error) {
	evs, err := s.f.TurnEvents(ctx, sessionID, turnID)
	return feedEvents(evs), err
}

func (s feedStore) Append(ctx context.Context, entries []httpapi.Entry) ([]httpapi.Event, error) {
	in := make([]storerec.FeedEntry, len(entries))
	for i, e := range entries {
		in[i] = storerec.FeedEntry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}
	}
	evs, err := s.f.Append(ctx, in)
	return feedEvents(evs), err
}

func (s feedStore) After(ctx context.Context, after int64, sessionID string, limit int) ([]httpapi.Event, error) {
	evs, err := s.f.After(ctx, after, sessionID, limit)
	return feedEvents(evs), err
}

func (s feedStore) Before(ctx context.Context, before int64, sessionID string, limit int) ([]httpapi.Event, error) {
	evs, err := s.f.Before(ctx, before, sessionID, limit)
	return feedEvents(evs), err
}

func (s feedStore) Bounds(ctx context.Context) (int64, int64, error) { return s.f.Bounds(ctx) }
func (s feedStore) Changed() <-chan struct{}                         { return s.f.Changed() }
func (s feedStore) Prune(ctx context.Context, before time.Time) (int64, error) {
	return s.f.Prune(ctx, before)
}

func feedEvent(e storerec.FeedEvent) httpapi.Event {
	return httpapi.Event{ID: e.ID, Entry: httpapi.Entry{SessionID: e.SessionID, Turn: e.Turn, Type: e.Type, Data: e.Data}, Time: e.Time}
}

func feedEvents(evs []storerec.FeedEvent) []httpapi.Event {
	out := make([]httpapi.Event, len(evs))
	for i, e := range evs {
		out[i] = feedEvent(e)
	}
	return out
}

// outboxStore adapts either store's webhook outbox to httpapi.Outbox.
type outboxStore struct {
	o interface {
		Fill(ctx context.Context, endpoint string, types []string, now time.Time, limit int) (int, error)
		Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]storerec.Delivery, error)
		Settle(ctx context.Context, id int64, owner, status string, attempt int, next time.Time, lastError string) (bool, error)
		Disable(ctx context.Context, endpoint string) error
	}
}

func (s outboxStore) Fill(ctx context.Context, endpoint string, types []string, now time.Time, limit int) (int, error) {
	return s.o.Fill(ctx, endpoint, types, now, limit)
}

func (s outboxStore) Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]httpapi.Delivery, error) {
	ds, err := s.o.Claim(ctx, owner, now, lease, limit)
	out := make([]httpapi.Delivery, len(ds))
	for i, d := range ds {
		out[i] = httpapi.Delivery{ID: d.ID, Endpoint: d.Endpoint, Attempt: d.Attempt, Event: feedEvent(d.Event)}
	}
	return out, err
}

func (s outboxStore) Settle(ctx context.Context, id int64, owner, status string, attempt int, next time.Time, lastError string) (bool, error) {
	return s.o.Settle(ctx, id, owner, status, attempt, next, lastError)
}

func (s outboxStore) Disable(ctx context.Context, endpoint string) error {
	return s.o.Disable(ctx, endpoint)
}

// projects adapts either store's projects to projectStore.
type projects struct {
	p interface {
		Add(ctx context.Context, name, dir string) (storerec.Project, error)
		Get(ctx context.Context, name string) (storerec.Project, error)
		List(ctx context.Context) ([]storerec.Project, error)
	}
}

func (s projects) Add(ctx context.Context, name, dir string) error {
	_, err := s.p.Add(ctx, name, dir)
	return err
}

func (s projects) Get(ctx context.Context, name string) error {
	_, err := s.p.Get(ctx, name)
	return err
}

func (s projects) List(ctx context.Context) ([]project, error) {
	ps, err := s.p.List(ctx)
	out := make([]project, len(ps))
	for i, p := range ps {
		out[i] = project{p.Name, p.Dir}
	}
	return out, err
}
