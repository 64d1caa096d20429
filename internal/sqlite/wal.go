package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// leaveWAL stops the writer's close from checkpointing the WAL into the
// database file, which SQLite's last connection does by default: two
// fsyncs at every process's exit (five milliseconds of a one-shot's
// wall time on a quiet disk), and, as the checkpoint resets the WAL, a
// WAL header and directory fsync at the next process's first write.
//
// The file is left as a kill -9 leaves it, which is consistent by design:
// every commit is in the WAL, and the next opener rebuilds the WAL's
// index from it. That read costs about a millisecond of CPU a megabyte,
// so Close checkpoints a WAL past trimWALBytes (trimWAL), about one
// process in seven. Durability is synchronous=NORMAL's, as before: a
// process crash loses nothing committed, a power cut may lose the
// commits since the last checkpoint.
//
// The driver has no call for SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE; its
// connection's sqlite3 handle is read by reflection. A driver whose
// connection has none checkpoints at close, as before.
func leaveWAL(ctx context.Context, writer *sql.DB, log *slog.Logger) {
	c, err := writer.Conn(ctx)
	if err == nil {
		err = c.Raw(noCheckpointOnClose)
		c.Close()
	}
	if err != nil {
		log.Debug("leave the WAL at close", "err", err)
	}
}

// noCheckpointOnClose sets SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE on a driver
// connection.
func noCheckpointOnClose(dc any) error {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("connection %T: not a struct", dc)
	}
	f := v.Elem().FieldByName("db")
	if !f.IsValid() || f.Kind() != reflect.Uintptr || f.Uint() == 0 {
		return fmt.Errorf("connection %T: no sqlite3 handle", dc)
	}
	tls := libc.NewTLS()
	defer tls.Close()
	const slot = 8 // libc.VaList's stride per argument
	va := tls.Alloc(2 * slot)
	defer tls.Free(2 * slot)
	if rc := sqlite3.Xsqlite3_db_config(tls, uintptr(f.Uint()), sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
		libc.VaList(va, int32(1), uintptr(0))); rc != sqlite3.SQLITE_OK {
		return errors.New("sqlite3_db_config(SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE) returned " + fmt.Sprint(rc))
	}
	return nil
}

// trimWALBytes is the WAL size past which Close checkpoints it: a
// one-shot or a new ACP session adds some 140 KB.
const trimWALBytes = 1 << 20

// trimWAL checkpoints the WAL into the database file and truncates it
// when it has grown past trimWALBytes, so that the next opener's rebuild
// of its index stays short. It does not wait: another process reading or
// writing leaves it to a later close (or to the autocheckpoint).
func (db *DB) trimWAL(ctx context.Context) {
	fi, err := os.Stat(db.path + "-wal")
	if err != nil || fi.Size() <= trimWALBytes {
		return
	}
	c, err := db.writer.Conn(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	var busy, frames, done int
	if _, err = c.ExecContext(ctx, `PRAGMA busy_timeout = 0`); err == nil {
		err = c.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done)
	}
	db.log.Debug("checkpoint the WAL at close", "bytes", fi.Size(), "busy", busy, "frames", frames, "done", done, "err", err)
}
