package workspace_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/workspace"
)

func TestScopes(t *testing.T) {
	t.Parallel()
	for _, sc := range workspace.AllScopes {
		if got, err := workspace.ParseScope(string(sc)); err != nil || got != sc {
			t.Errorf("ParseScope(%s) = %s, %v", sc, got, err)
		}
	}
	for _, bad := range []string{"", "agreements", "AGREEMENTS:READ", "agreements:read ", "admin"} {
		if _, err := workspace.ParseScope(bad); err == nil || !strings.Contains(err.Error(), "audit:read") {
			t.Errorf("ParseScope(%q): %v, want an error naming the scopes", bad, err)
		}
	}
	got := workspace.Normalize([]workspace.Scope{workspace.AuditRead, workspace.AgreementsRead, workspace.AuditRead})
	if !slices.Equal(got, []workspace.Scope{workspace.AgreementsRead, workspace.AuditRead}) {
		t.Errorf("Normalize = %v", got)
	}
	p := workspace.Principal{Scopes: []workspace.Scope{workspace.KeysManage, workspace.AgreementsRead}}
	if m := p.Missing([]workspace.Scope{workspace.AuditRead, workspace.AgreementsRead, workspace.AgreementsWrite}); !slices.Equal(m, []workspace.Scope{workspace.AgreementsWrite, workspace.AuditRead}) {
		t.Errorf("Missing = %v", m)
	}
	if b := workspace.Bootstrap(); b.WorkspaceID != workspace.DefaultID || len(b.Missing(workspace.AllScopes)) != 0 || b.Actor.Kind != workspace.ActorBootstrap {
		t.Errorf("Bootstrap = %+v", b)
	}
	if !slices.Equal(workspace.RoleScopes(workspace.RoleOwner), workspace.AllScopes) || slices.Contains(workspace.RoleScopes(workspace.RoleViewer), workspace.AgreementsWrite) ||
		workspace.RoleScopes("admin") != nil {
		t.Error("RoleScopes")
	}
	if got := workspace.NormalizeEmail("  Ops@Example.COM "); got != "ops@example.com" {
		t.Errorf("NormalizeEmail = %q", got)
	}
}
