// Package archive carries sessions out of meka and back in: export as a
// complete archive (JSON Lines that import restores exactly), a readable
// Markdown transcript or an ATIF trajectory for benchmark harnesses, and
// import of an archive, a Claude Code session file or a Codex rollout
// file as a new session that `meka -r` continues.
//
// It works on session rows alone; writing them is the store's.
package archive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"meka.dev/meka/internal/events"
	"meka.dev/meka/session"
)

// Format names a meka archive in its header line.
const (
	Format  = "meka.session"
	Version = 1
)

// MaxLine bounds one line of a file to import.
const MaxLine = 64 << 20

// Header is an archive's first line: what the rows are of.
type Header struct {
	Format     string       `json:"format"`
	Version    int          `json:"version"`
	ExportedAt time.Time    `json:"exported_at"`
	Meta       session.Meta `json:"meta"`
	// Checklist is the plan the rows add up to at the end, as the last
	// checklist.updated or plan.updated event carries it: informative, as
	// import folds it from the rows again.
	Checklist json.RawMessage `json:"checklist,omitempty"`
	// Rows counts the lines after the header, so a cut file is refused.
	Rows int `json:"rows"`
}

// Session is a session's meta and its every row, in order.
type Session struct {
	Meta session.Meta
	Rows []session.Row
	// Origin is the id the session had where it came from (meka,
	// Claude Code, Codex), for an imported one.
	Origin string
}

// Load reads a session whole from a store.
func Load(ctx context.Context, store session.Store, id string) (Session, error) {
	m, err := store.Get(ctx, id)
	if err != nil {
		return Session{}, err
	}
	rows, err := store.Rows(ctx, m.ID, 0)
	if err != nil {
		return Session{}, err
	}
	return Session{Meta: m, Rows: rows}, nil
}

// Checklist is the last plan event the rows cause, nil when none.
func Checklist(id string, rows []session.Row) json.RawMessage {
	for i := len(rows) - 1; i >= 0; i-- {
		r := rows[i]
		if _, ok := r.Entry.(session.ToolResult); !ok {
			continue
		}
		for _, e := range events.FromRows(id, rows[i:i+1]) {
			if e.Type == events.ChecklistUpdated || e.Type == events.PlanUpdated {
				return e.Data
			}
		}
	}
	return nil
}

// WriteJSON writes s as an archive: the header line, then a line per row.
func WriteJSON(w io.Writer, s Session, now time.Time) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	h := Header{Format: Format, Version: Version, ExportedAt: now.UTC(), Meta: s.Meta, Checklist: Checklist(s.Meta.ID, s.Rows), Rows: len(s.Rows)}
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return err
	}
	for _, r := range s.Rows {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("row %d: %w", r.Seq, err)
		}
	}
	return bw.Flush()
}

// LineError says which line of a file could not be read, and why.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ReadJSON reads an archive whole, or refuses it with the first line it
// cannot take. Rows are decoded in parallel: a long session's lines are
// independent until their order is checked.
func ReadJSON(r io.Reader) (Header, Session, error) {
	type line struct {
		n    int
		text []byte
	}
	var lines []line
	n := 0
	if err := eachLine(r, func(b []byte) error {
		n++
		lines = append(lines, line{n, bytes.Clone(b)})
		return nil
	}); err != nil {
		return Header{}, Session{}, err
	}
	if len(lines) == 0 {
		return Header{}, Session{}, &LineError{Line: 1, Err: errors.New("the file is empty")}
	}
	var h Header
	dec := json.NewDecoder(bytes.NewReader(lines[0].text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return Header{}, Session{}, &LineError{Line: lines[0].n, Err: fmt.Errorf("not a meka archive header: %v", err)}
	}
	if h.Format != Format {
		return Header{}, Session{}, &LineError{Line: lines[0].n, Err: fmt.Errorf("format %q: want %q", h.Format, Format)}
	}
	if h.Version != Version {
		return Header{}, Session{}, &LineError{Line: lines[0].n, Err: fmt.Errorf("archive version %d: this meka reads version %d", h.Version, Version)}
	}
	body := lines[1:]
	rows := make([]session.Row, len(body))
	errs := make([]error, len(body))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(body)/256))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(body); i += workers {
				rows[i], errs[i] = decodeRow(body[i].text)
			}
		})
	}
	wg.Wait()
	for i, r := range rows {
		err := errs[i]
		if err == nil && i > 0 {
			prev := rows[i-1]
			switch {
			case r.Seq <= prev.Seq:
				err = fmt.Errorf("row seq %d after %d: rows must be in order", r.Seq, prev.Seq)
			case r.Turn < prev.Turn:
				err = fmt.Errorf("row turn %d after %d: turns must not go back", r.Turn, prev.Turn)
			}
		}
		if err != nil {
			return Header{}, Session{}, &LineError{Line: body[i].n, Err: err}
		}
	}
	if len(rows) != h.Rows {
		return Header{}, Session{}, &LineError{Line: n + 1, Err: fmt.Errorf("the header promises %d rows, the file has %d: it was cut short", h.Rows, len(rows))}
	}
	return h, Session{Meta: h.Meta, Rows: rows, Origin: h.Meta.ID}, nil
}

// decodeRow reads one row line, as session.Row's JSON form has it.
func decodeRow(b []byte) (session.Row, error) {
	var w struct {
		Seq   int64           `json:"seq"`
		Turn  int64           `json:"turn"`
		Time  time.Time       `json:"time"`
		Kind  string          `json:"kind"`
		Entry json.RawMessage `json:"entry"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return session.Row{}, fmt.Errorf("not a row: %v", err)
	}
	if w.Kind == "" || len(w.Entry) == 0 {
		return session.Row{}, errors.New("not a row: no kind or entry")
	}
	if w.Turn < 0 {
		return session.Row{}, fmt.Errorf("row turn %d", w.Turn)
	}
	e, err := session.DecodeEntry(w.Kind, w.Entry)
	if err != nil {
		return session.Row{}, fmt.Errorf("not a row: %v", err)
	}
	return session.Row{Seq: w.Seq, Turn: w.Turn, Time: w.Time, Entry: e}, nil
}

// eachLine calls fn with each non-blank line of r, numbering from 1; an
// error from fn or the reader becomes a *LineError.
func eachLine(r io.Reader, fn func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return &LineError{Line: n, Err: err}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("longer than %d bytes", MaxLine)
		}
		return &LineError{Line: n + 1, Err: err}
	}
	return nil
}

// Import stores s as a new session: a new id, the rows in order with
// their times (where the store restores), the meta's own fields kept.
// Nothing is left behind when it fails.
func Import(ctx context.Context, store session.Store, s Session) (session.Meta, error) {
	m := s.Meta
	m.ID = ""
	m.ParentID, m.ParentCallID = "", ""
	m.UpdatedAt = time.Time{}
	created, err := store.Create(ctx, m)
	if err != nil {
		return session.Meta{}, err
	}
	rows := make([]session.Row, len(s.Rows))
	for i, r := range s.Rows {
		rows[i] = session.Row{Turn: r.Turn, Time: r.Time, Entry: r.Entry}
	}
	appendRows := store.Append
	if r, ok := store.(session.Restorer); ok {
		appendRows = r.Restore // the rows keep their times
	}
	if len(rows) > 0 {
		if _, err := appendRows(ctx, created.ID, rows); err != nil {
			_ = store.Delete(context.WithoutCancel(ctx), created.ID)
			return session.Meta{}, err
		}
	}
	return store.Get(ctx, created.ID)
}
