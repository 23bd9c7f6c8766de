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

// warnUnguardedAudit logs, at start, when the database lacks the audit
// guard: the append-only trigger of audit_entries then binds every role
// but the table's owner, which is the role the service connects as. Not
// fatal: installing it needs a superuser, which not every deployment has
// (docs/operations.md says what binds whom either way).
func warnUnguardedAudit(ctx context.Context, st *store.Store, log *slog.Logger) {
	ok, err := st.AuditGuardInstalled(ctx)
	if err == nil && !ok {
		log.Warn("the audit guard is not installed: the service's database role owns audit_entries and could alter its entries; " +
			"install deploy/kubernetes/overlays/cloudnativepg/audit-guard.sql as a superuser (see docs/operations.md)")
	}
}
