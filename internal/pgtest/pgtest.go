// Package pgtest gives each test its own PostgreSQL database, cloned from a
// migrated template, on the server named by CONSENSUS_TEST_DATABASE_URL.
// It refuses any server that is not on this machine: tests drop databases.
// Create does the same without a test, for consensus-demo.
//
// The databases are owned, migrated and used by a role that row-level
// security binds, as the service's role in production is: the URL's own
// role when it is an ordinary one (deploy/local/pg.sh prints consensus_app),
// and otherwise, for a superuser or BYPASSRLS URL, the role AppRole, which
// pgtest creates.
package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
)

// templates holds, per server URL, the migrated template once it is made.
var templates sync.Map // base URL -> *template

type template struct {
	once sync.Once
	name string
	// app is the URL of the role the databases are made for: base itself
	// unless base's role bypasses row-level security.
	app string
	err error
}

// AppRole is the role pgtest creates and hands out when
// CONSENSUS_TEST_DATABASE_URL names a superuser or a BYPASSRLS role.
const AppRole = "consensus_app"

// URL returns a connection URL to a fresh, migrated database that is dropped
// when the test ends. The test fails when CONSENSUS_TEST_DATABASE_URL is unset
// (make test sets it) or points off this machine.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("CONSENSUS_TEST_DATABASE_URL")
	if base == "" {
		t.Fatal("CONSENSUS_TEST_DATABASE_URL is not set: run the suite with 'make test', which starts a private PostgreSQL")
	}
	u, drop, err := Create(context.Background(), base)
	if err != nil {
		t.Fatalf("CONSENSUS_TEST_DATABASE_URL: %v", err)
	}
	t.Cleanup(drop)
	return u
}

// Create makes a fresh database, cloned from the migrated template, on the
// PostgreSQL server of base and returns its URL and a function that drops
// it. It needs no test, so consensus-demo uses it too. It refuses a base
// that is not a postgres:// URL or whose server is not on this machine
// (loopback or a Unix socket): the callers drop databases.
func Create(ctx context.Context, base string) (string, func(), error) {
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		return "", nil, errors.New("pgtest: the server URL must be a postgres:// URL")
	}
	cfg, err := pgconn.ParseConfig(base)
	if err != nil {
		return "", nil, fmt.Errorf("pgtest: server URL: %w", err)
	}
	if !isLocal(cfg.Host) {
		return "", nil, errors.New("pgtest: the server must be on this machine (loopback or a Unix socket): the callers drop databases")
	}
	v, _ := templates.LoadOrStore(base, &template{})
	tmpl := v.(*template)
	tmpl.once.Do(func() {
		if tmpl.app, tmpl.err = appURL(ctx, base); tmpl.err == nil {
			tmpl.name, tmpl.err = ensureTemplate(ctx, base, tmpl.app)
		}
	})
	if tmpl.err != nil {
		return "", nil, fmt.Errorf("pgtest: template: %w", tmpl.err)
	}
	name := "t_" + strings.ToLower(secret.Random(9))
	name = strings.NewReplacer("-", "_").Replace(name)
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("pgtest: connect: %w", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %q TEMPLATE %q OWNER %q`, name, tmpl.name, userOf(tmpl.app))); err != nil {
		return "", nil, fmt.Errorf("pgtest: create database: %w", err)
	}
	drop := func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), fmt.Sprintf(`DROP DATABASE IF EXISTS %q WITH (FORCE)`, name))
	}
	return withDatabase(tmpl.app, name), drop, nil
}

// appURL returns base when its role is bound by row-level security, and
// otherwise base with its user replaced by AppRole, creating that role
// (an ordinary one that may create databases) when it is missing.
func appURL(ctx context.Context, base string) (string, error) {
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	var bypass bool
	if err := c.QueryRow(ctx, `SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user`).Scan(&bypass); err != nil {
		return "", err
	}
	if !bypass {
		return base, nil
	}
	_, err = c.Exec(ctx, `DO $$ BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '`+AppRole+`') THEN
			CREATE ROLE `+AppRole+` LOGIN CREATEDB NOSUPERUSER NOBYPASSRLS;
		END IF;
	END $$`)
	if err != nil && !isDuplicate(err) {
		return "", fmt.Errorf("create role %s: %w", AppRole, err)
	}
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("user", AppRole)
	u.RawQuery = q.Encode()
	if u.User != nil {
		u.User = url.User(AppRole)
	}
	return u.String(), nil
}

// isDuplicate reports a role created meanwhile by another test process.
func isDuplicate(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "42710" || pgErr.Code == "23505")
}

// userOf returns the role a URL connects as.
func userOf(dbURL string) string {
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		panic("pgtest: " + err.Error())
	}
	return cfg.User
}

// ServiceURL returns dbURL with the start-up setting the service's own pool
// carries (consensus.scope=service), under which row-level security shows
// the rows of every workspace: for tests that read or write tables
// directly, as the service's participant routes and workers do.
func ServiceURL(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		panic("pgtest: " + err.Error())
	}
	q := u.Query()
	q.Set("options", "-c consensus.scope=service")
	// pgx reads a '+' in the query as itself, not as a space.
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	return u.String()
}

// Store opens a store on a fresh database (see URL) and closes it when the
// test ends.
func Store(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), URL(t))
	if err != nil {
		t.Fatalf("pgtest: open store: %v", err)
	}
	t.Cleanup(st.Close)
	return st
}

func isLocal(host string) bool {
	if strings.HasPrefix(host, "/") || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ensureTemplate creates (once per migration set, across test processes) a
// database holding the migrated schema (ours and River's job queue), named
// after a hash of the migrations and of the role that owns it.
func ensureTemplate(ctx context.Context, base, app string) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(consensus.Migrations, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(consensus.Migrations, path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", err
	}
	h.Write([]byte(userOf(app)))
	// River's schema is part of the template too: a River upgrade that adds
	// a migration makes a new template.
	fmt.Fprintf(h, "river %v", store.RiverVersions())
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", err
	}
	defer admin.Close(ctx)
	// So are the event triggers of the server's template1 (the audit guard
	// deploy/local/pg.sh installs there and in base's database) and every
	// function of their schemas: a template made before they were installed
	// or changed is not reused.
	var guard string
	if err := admin.QueryRow(ctx, `SELECT coalesce((SELECT string_agg(evtname || ' ' || evtfoid::regproc, ',' ORDER BY evtname) FROM pg_event_trigger), '') || ' ' ||
		coalesce((SELECT string_agg(p.oid::regprocedure || ' ' || md5(p.prosrc), ',' ORDER BY 1) FROM pg_proc p
			WHERE p.pronamespace IN (SELECT f.pronamespace FROM pg_event_trigger e JOIN pg_proc f ON f.oid = e.evtfoid)), '')`).Scan(&guard); err != nil {
		return "", err
	}
	fmt.Fprintf(h, "event triggers %s", guard)
	name := "tmpl_" + hex.EncodeToString(h.Sum(nil))[:16]
	// Serialize template creation between the test binaries running in parallel.
	if _, err := admin.Exec(ctx, `SELECT pg_advisory_lock(7261001)`); err != nil {
		return "", err
	}
	defer admin.Exec(ctx, `SELECT pg_advisory_unlock(7261001)`) //nolint:errcheck
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_build"
	_, _ = admin.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %q WITH (FORCE)`, building))
	if _, err := admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %q OWNER %q`, building, userOf(app))); err != nil {
		return "", err
	}
	if err := store.Migrate(ctx, withDatabase(app, building)); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %q RENAME TO %q`, building, name)); err != nil {
		return "", err
	}
	return name, nil
}

// withDatabase returns the URL base with its database name replaced.
func withDatabase(base, name string) string {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		panic("pgtest: CONSENSUS_TEST_DATABASE_URL must be a postgres:// URL")
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}
