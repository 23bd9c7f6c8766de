package store_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/consensus-md/consensus/internal/audit"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/workspace"
)

// workspaceTables are the tables whose rows belong to a workspace.
var workspaceTables = []string{"workspaces", "agreements", "revisions", "participants", "invitations", "sessions", "events", "artifacts",
	"outbox", "outbox_attempts", "records", "webhooks", "webhook_deliveries", "api_keys", "operators", "audit_entries"}

// newWorkspace stores a workspace (as the command line does, in the
// service's scope) and returns its id.
func newWorkspace(t *testing.T, st *store.Store, name string) uuid.UUID {
	t.Helper()
	id := uuid.New()
	ctx := context.Background()
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		return tx.WorkspaceInsert(ctx, store.Workspace{ID: id, Name: name, CreatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	return id
}

// agreementIn stores an agreement (with one participant and invitation) in
// a workspace, as an operator of it would.
func agreementIn(t *testing.T, st *store.Store, ws uuid.UUID) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	id, pid, iid := uuid.New(), uuid.New(), uuid.New()
	now := time.Now().UTC().Truncate(time.Microsecond)
	err := st.InWorkspace(ctx, ws, func(tx *store.Tx) error {
		if err := tx.AgreementInsert(ctx, id, now.Add(time.Hour), now); err != nil {
			return err
		}
		if err := tx.RevisionInsert(ctx, store.Revision{AgreementID: id, Number: 1, Canonical: []byte(`{}`), Markdown: "# T\n",
			RevisionDigest: "sha256:r", MarkdownDigest: "sha256:m", TermsDigest: strings.Repeat("0", 64), LockedAt: now}); err != nil {
			return err
		}
		if err := tx.ParticipantInsert(ctx, store.Participant{ID: pid, AgreementID: id, InvitationID: iid, DisplayName: "A", Kind: room.KindAgent,
			Email: "a@example.test", Required: true}); err != nil {
			return err
		}
		return tx.InvitationInsert(ctx, store.Invitation{ID: iid, ParticipantID: pid, AgreementID: id, SecretHash: []byte{1}, ProofHash: []byte{2},
			ExpiresAt: now.Add(time.Hour), IssuedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestRowLevelSecurity: connected as the service's own role, a session
// that sets neither the scope nor a workspace sees no row of any
// workspace-owned table and can write none; a workspace transaction sees
// its own workspace's rows only; the service scope sees them all.
func TestRowLevelSecurity(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if bypass, err := st.RoleBypassesRLS(ctx); err != nil || bypass {
		t.Fatalf("the test's role bypasses row-level security (%v): the test proves nothing", err)
	}
	a, b := newWorkspace(t, st, "a"), newWorkspace(t, st, "b")
	inA, inB := agreementIn(t, st, a), agreementIn(t, st, b)
	agreementIn(t, st, b)

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var super, bypass bool
	if err := conn.QueryRow(ctx, `SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user`).Scan(&super, &bypass); err != nil || super || bypass {
		t.Fatalf("plain connection: superuser %v, bypassrls %v, %v", super, bypass, err)
	}
	for _, table := range workspaceTables {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: a connection with no workspace sees %d rows (%v)", table, n, err)
		}
	}
	_, err = conn.Exec(ctx, `INSERT INTO agreements (id, deadline, workspace_id) VALUES ($1, now(), $2)`, uuid.New(), a)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("a connection with no workspace inserted an agreement: %v", err)
	}

	// A workspace transaction lists and reads its own rows only.
	err = st.InWorkspace(ctx, a, func(tx *store.Tx) error {
		list, err := tx.AgreementList(ctx, 10, nil)
		if err != nil || len(list) != 1 || list[0].ID != inA || list[0].WorkspaceID != a {
			t.Errorf("workspace a lists %+v, %v", list, err)
		}
		if _, err := tx.AgreementGet(ctx, inB); !errors.Is(err, room.ErrNotFound) {
			t.Errorf("workspace a reads b's agreement: %v", err)
		}
		if _, err := tx.ParticipantListByAgreement(ctx, inB); err != nil {
			return err
		}
		for _, table := range workspaceTables {
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil || n != 0 {
				t.Errorf("%s: another connection sees %d rows while a workspace transaction runs (%v)", table, n, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Writing another workspace's row from a workspace transaction fails.
	err = st.InWorkspace(ctx, a, func(tx *store.Tx) error {
		return tx.ParticipantInsert(ctx, store.Participant{ID: uuid.New(), AgreementID: inB, InvitationID: uuid.New(), DisplayName: "X",
			Kind: room.KindAgent, Email: "x@example.test", Position: 9})
	})
	if err == nil {
		t.Error("workspace a added a participant to b's agreement")
	}
	// The service's own pool sees every workspace.
	if _, err := st.AgreementGet(ctx, inB); err != nil {
		t.Errorf("the service scope cannot read b's agreement: %v", err)
	}
	// Outside a workspace transaction an agreement cannot be created.
	err = st.InTx(ctx, func(tx *store.Tx) error { return tx.AgreementInsert(ctx, uuid.New(), time.Now(), time.Now()) })
	if err == nil {
		t.Error("an agreement was created outside a workspace")
	}
}

// TestAuditEntriesAreAppendOnly: the service's role cannot change or
// remove an entry, and the stored chain verifies.
func TestAuditEntriesAreAppendOnly(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ws := newWorkspace(t, st, "audited")
	for i, action := range []string{"key.create", "agreement.create", "participant.revoke"} {
		err := st.InWorkspace(ctx, ws, func(tx *store.Tx) error {
			_, err := tx.AuditAppend(ctx, store.AuditRecord{WorkspaceID: ws, At: time.Now().UTC().Truncate(time.Microsecond),
				Actor: workspace.Actor{Kind: workspace.ActorKey, ID: uuid.NewString(), Name: "ci"}, Action: action,
				Targets: map[string]string{"agreementId": uuid.NewString()}, RequestID: "r" + string(rune('0'+i)), ClientAddress: "127.0.0.1", Result: "ok"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var entries []audit.Entry
	if err := st.InWorkspace(ctx, ws, func(tx *store.Tx) error { entries, err = tx.AuditList(ctx, ws, 0, 10); return err }); err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d entries", len(entries))
	}
	if _, err := audit.Verify(entries); err != nil {
		t.Fatalf("the stored chain: %v", err)
	}

	// The service's own role, in the service's scope, which sees the rows.
	conn, err := pgx.Connect(ctx, pgtest.ServiceURL(dbURL))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var owner string
	if err := conn.QueryRow(ctx, `SELECT tableowner FROM pg_tables WHERE tablename = 'audit_entries'`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	var me string
	if err := conn.QueryRow(ctx, `SELECT current_user`).Scan(&me); err != nil || me != owner {
		t.Fatalf("the test connects as %s, the table's owner is %s (%v)", me, owner, err)
	}
	for _, stmt := range []string{
		`UPDATE audit_entries SET result = 'ok' WHERE seq = 2`,
		`DELETE FROM audit_entries WHERE seq = 3`,
		`TRUNCATE audit_entries`,
	} {
		_, err := conn.Exec(ctx, stmt)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Errorf("%s: %v, want refused (42501)", stmt, err)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM audit_entries WHERE workspace_id = $1`, ws).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d entries after the refusals (%v)", n, err)
	}
}

// TestAPIKeys: a key is found by its token's hash only, lists and revokes
// within its workspace, and its use is written at most once a minute.
func TestAPIKeys(t *testing.T) {
	t.Parallel()
	st := pgtest.Store(t)
	ctx := context.Background()
	a, b := newWorkspace(t, st, "a"), newWorkspace(t, st, "b")
	sum := sha256.Sum256([]byte("cok_test"))
	now := time.Now().UTC().Truncate(time.Microsecond)
	k := store.APIKey{ID: uuid.New(), WorkspaceID: a, Name: "ci", TokenHash: sum[:], Scopes: []workspace.Scope{workspace.AgreementsRead},
		CreatedAt: now, CreatedBy: workspace.Actor{Kind: workspace.ActorBootstrap}}
	if err := st.InWorkspace(ctx, a, func(tx *store.Tx) error { return tx.APIKeyInsert(ctx, k) }); err != nil {
		t.Fatal(err)
	}
	got, err := st.APIKeyGetByTokenHash(ctx, sum[:])
	if err != nil || got.ID != k.ID || got.WorkspaceID != a || len(got.Scopes) != 1 || got.Scopes[0] != workspace.AgreementsRead {
		t.Fatalf("by hash: %+v, %v", got, err)
	}
	if err := st.InWorkspace(ctx, b, func(tx *store.Tx) error {
		if list, err := tx.APIKeyList(ctx, b); err != nil || len(list) != 0 {
			t.Errorf("b lists %+v, %v", list, err)
		}
		_, err := tx.APIKeyRevoke(ctx, a, k.ID, now)
		return err
	}); !errors.Is(err, room.ErrNotFound) {
		t.Fatalf("b revoked a's key: %v", err)
	}
	for i, at := range []time.Duration{0, 30 * time.Second, 61 * time.Second} {
		if err := st.APIKeyTouch(ctx, k.ID, now.Add(at)); err != nil {
			t.Fatal(err)
		}
		got, _ := st.APIKeyGetByTokenHash(ctx, sum[:])
		want := now
		if i == 2 {
			want = now.Add(at)
		}
		if got.LastUsedAt == nil || !got.LastUsedAt.Equal(want) {
			t.Errorf("after a use at +%v: last used %v, want %v", at, got.LastUsedAt, want)
		}
	}
	var revoked store.APIKey
	if err := st.InWorkspace(ctx, a, func(tx *store.Tx) error { revoked, err = tx.APIKeyRevoke(ctx, a, k.ID, now); return err }); err != nil || revoked.RevokedAt == nil {
		t.Fatalf("revoke: %+v, %v", revoked, err)
	}
}
