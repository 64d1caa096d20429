// Package pgtest gives tests a real PostgreSQL server: the one named by
// $MEKA_TEST_POSTGRES (a libpq URL or keyword string of a role that may
// create databases), else one it starts itself from the distribution's
// binaries in a temporary directory, listening on a Unix socket only.
// Each test gets a fresh database, dropped when it ends.
//
// Tests skip, saying why, only when no server can be had; with
// $MEKA_TEST_POSTGRES_REQUIRED set (as .ci/run sets it) they fail
// instead. It imports pgx and nothing from meka.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables the package reads.
const (
	EnvURL      = "MEKA_TEST_POSTGRES"
	EnvRequired = "MEKA_TEST_POSTGRES_REQUIRED"
)

var (
	once    sync.Once
	admin   string // the admin connection string
	failure error  // why no server could be had
	stop    func() // stops a server started here
)

// Stop stops a server this package started, if any. TestMain calls it
// after m.Run.
func Stop() {
	if stop != nil {
		stop()
		stop = nil
	}
}

// Main runs a test binary's tests and then stops the server they started:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Admin returns the admin connection string, skipping (or, when required,
// failing) t when no server can be had.
func Admin(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if u := os.Getenv(EnvURL); u != "" {
			admin = u
			return
		}
		admin, stop, failure = start()
	})
	if failure != nil {
		if os.Getenv(EnvRequired) != "" {
			t.Fatalf("no PostgreSQL server: %v", failure)
		}
		t.Skipf("no PostgreSQL server (set %s, or install the postgresql package): %v", EnvURL, failure)
	}
	return admin
}

// NewDatabase creates an empty database for t and returns its URL; it is
// dropped when t ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base := Admin(t)
	var b [6]byte
	rand.Read(b[:])
	name := "meka_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to the test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("connect to drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		t.Fatalf("parse %s: %v", EnvURL, err)
	}
	return URL(cfg.Host, cfg.Port, cfg.User, cfg.Password, name)
}

// URL spells a connection as a postgres:// URL, the form meka's config
// takes; a Unix socket directory goes in the host parameter.
func URL(host string, port uint16, user, password, dbname string) string {
	u := url.URL{Scheme: "postgres", Path: "/" + dbname}
	if password != "" {
		u.User = url.UserPassword(user, password)
	} else {
		u.User = url.User(user)
	}
	q := url.Values{"sslmode": {"disable"}}
	if strings.HasPrefix(host, "/") {
		q.Set("host", host)
		q.Set("port", strconv.Itoa(int(port)))
	} else {
		u.Host = net.JoinHostPort(host, strconv.Itoa(int(port)))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// quote writes a keyword value as libpq reads it.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// start runs initdb and a server in a temporary directory. PostgreSQL
// refuses to run as root, so as root it runs as the postgres user.
func start() (string, func(), error) {
	bin, err := binDir()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "meka-pg-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	var runAs []string
	owner := ""
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			cleanup()
			return "", nil, fmt.Errorf("running as root and no postgres user to run the server as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			cleanup()
			return "", nil, err
		}
		runAs = []string{"runuser", "-u", "postgres", "--"}
		owner = "postgres"
	} else {
		u, err := user.Current()
		if err != nil {
			cleanup()
			return "", nil, err
		}
		owner = u.Username
	}
	run := func(name string, args ...string) error {
		argv := append(append([]string{}, runAs...), filepath.Join(bin, name))
		argv = append(argv, args...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(out.String()))
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := run("initdb", "-D", data, "-A", "trust", "-U", owner, "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		cleanup()
		return "", nil, err
	}
	// A Unix socket only: nothing listens on the network.
	opts := fmt.Sprintf("-c listen_addresses='' -k %s -c fsync=off -c max_connections=200", dir)
	if err := run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		cleanup()
		return "", nil, err
	}
	stopFn := func() {
		run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
		cleanup()
	}
	return fmt.Sprintf("host=%s port=5432 user=%s dbname=postgres sslmode=disable", quote(dir), quote(owner)), stopFn, nil
}

// binDir finds the server's binaries: beside initdb on PATH, else the
// newest Debian-style /usr/lib/postgresql/<version>/bin.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir, nil
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return "", errors.New("initdb not found")
	}
	sort.Slice(found, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(found[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(found[j]))))
		return vi < vj
	})
	return filepath.Dir(found[len(found)-1]), nil
}

// Proxy forwards TCP connections to the test server, and can cut them
// all, as a database that goes away would.
type Proxy struct {
	l    net.Listener
	dial func() (net.Conn, error)

	mu    sync.Mutex // guards conns and down
	conns map[net.Conn]bool
	down  bool
	wg    sync.WaitGroup
}

// Forward serves l, forwarding each connection to the server at url, until
// t ends.
func Forward(t testing.TB, l net.Listener, url string) *Proxy {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{l: l, conns: map[net.Conn]bool{}, dial: func() (net.Conn, error) {
		if strings.HasPrefix(cfg.Host, "/") {
			return net.Dial("unix", filepath.Join(cfg.Host, fmt.Sprintf(".s.PGSQL.%d", cfg.Port)))
		}
		return net.Dial("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	}}
	t.Cleanup(func() {
		l.Close()
		p.Cut()
		p.wg.Wait()
	})
	p.wg.Go(p.serve)
	return p
}

// NewProxy forwards a port on 127.0.0.1 to the database at url and
// returns the proxy and the database's URL through it.
func NewProxy(t testing.TB, url string) (*Proxy, string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := Forward(t, l, url)
	return p, URL("127.0.0.1", uint16(l.Addr().(*net.TCPAddr).Port), cfg.User, cfg.Password, cfg.Database)
}

func (p *Proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		s, err := p.dial()
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		p.wg.Go(func() { io.Copy(s, c); s.Close() })
		p.wg.Go(func() { io.Copy(c, s); c.Close() })
	}
}

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore accepts connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}
