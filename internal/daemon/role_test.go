package daemon

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/proctest"
	"github.com/consensus-md/consensus/internal/store"
)

// TestRoleThatBypassesRLSIsRefusedInProduction: connected as the cluster's
// superuser, production refuses to start naming DATABASE_URL and a local
// run warns; the service's own role starts either way.
func TestRoleThatBypassesRLSIsRefusedInProduction(t *testing.T) {
	t.Parallel()
	pg := proctest.StartPostgres(t)
	ctx := context.Background()
	open := func(url string) *store.Store {
		st, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	super, app := open(pg.AdminURL(t)), open(pg.URL())
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	err := checkRole(ctx, &config.Config{Env: config.EnvProduction}, super, log)
	if !errors.Is(err, errRoleBypassesRLS) || !strings.HasPrefix(err.Error(), "DATABASE_URL: ") {
		t.Fatalf("production as a superuser: %v", err)
	}
	if err := checkRole(ctx, &config.Config{Env: config.EnvLocal}, super, log); err != nil || !strings.Contains(logs.String(), "DATABASE_URL: the role bypasses row-level security") {
		t.Fatalf("a local run as a superuser: %v, logged %s", err, logs.String())
	}
	for _, env := range []string{config.EnvProduction, config.EnvLocal} {
		if err := checkRole(ctx, &config.Config{Env: env}, app, log); err != nil {
			t.Fatalf("%s as the service's role: %v", env, err)
		}
	}
}
