package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestHealthReportsTheDatabase: 200 while PostgreSQL answers, 503 naming
// the database once it is gone.
func TestHealthReportsTheDatabase(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.do("GET", "/api/health", nil, nil)
	expect(t, r, 200, "")
	m := r.json(t)
	if m["status"] != "ok" || m["service"] != "consensus" || m["database"] != "ok" || m["version"] != "test" {
		t.Fatalf("health %s", r.body)
	}
	cfg, err := pgx.ParseConfig(s.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	name := cfg.Database
	cfg.Database = "postgres"
	admin, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(context.Background(), fmt.Sprintf(`DROP DATABASE %q WITH (FORCE)`, name)); err != nil {
		t.Fatal(err)
	}
	r = s.do("GET", "/api/health", nil, nil)
	expect(t, r, 503, "")
	if m := r.json(t); m["status"] == "ok" || m["database"] == "ok" {
		t.Fatalf("health after the database went away: %s", r.body)
	}
}
