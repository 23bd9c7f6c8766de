package daemon

import (
	"context"
	"errors"
	"log/slog"

	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/store"
)

// errRoleBypassesRLS: DATABASE_URL names a role that row-level security
// does not bind.
var errRoleBypassesRLS = errors.New("DATABASE_URL: the role is a superuser or has BYPASSRLS, so row-level security would not keep " +
	"workspaces apart: connect as an ordinary role that owns the database (see docs/operations.md)")

// checkRole refuses, in production, a database role that bypasses
// row-level security (a superuser, or one with BYPASSRLS): the second wall
// between workspaces would not stand. A local run only warns.
func checkRole(ctx context.Context, cfg *config.Config, st *store.Store, log *slog.Logger) error {
	bypass, err := st.RoleBypassesRLS(ctx)
	if err != nil || !bypass {
		return err
	}
	if cfg.Env != config.EnvLocal {
		return errRoleBypassesRLS
	}
	log.Warn("DATABASE_URL: the role bypasses row-level security (a superuser or BYPASSRLS); production refuses to start with it")
	return nil
}
