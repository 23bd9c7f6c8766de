package stress

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataAtRest: after a full flow — create, exchange, claim,
// comments, decisions, the artifact, a resend after a claim and a revoke —
// every row of every table (SELECT of every column, and pg_dump when it is
// installed) and every replica's log holds no invitation secret, email
// proof, session token, participant token, operator token or token key in
// clear, in any encoding a careless store would use (as is, without its
// kind prefix, hex of the text, the decoded bytes as hex or base64).
func TestDataAtRest(t *testing.T) {
	t.Parallel()
	v := newVenue(t, venueOpts{replicas: 2})
	base, other := v.url(0), v.url(1)
	ag := v.create(t, base, agreementBody("At rest", "Leave no secret behind.", []string{"One rule."},
		spec{Name: "A", Required: true}, spec{Name: "B", Required: true}, spec{Name: "C", Required: false}, spec{Name: "D", Required: false}))
	a := v.join(t, base, ag.Participants[0].InvitationID)
	b := v.join(t, other, ag.Participants[1].InvitationID)
	c := v.join(t, base, ag.Participants[2].InvitationID)
	d := v.join(t, other, ag.Participants[3].InvitationID)
	wantStatus(t, "comment", v.postEvent(base, a, "rest-a-1", "comment", "Rationale."), http.StatusCreated)
	wantStatus(t, "comment", v.postEvent(other, c, "rest-c-1", "comment", "Observing."), http.StatusCreated)
	// A resend after C's claim: C claims again with the fresh proof.
	wantStatus(t, "resend", v.resend(base, c.Inv.InvitationID), http.StatusAccepted)
	c2 := &member{Inv: v.mail.wait(t, c.Inv.InvitationID, func(inv invite) bool { return inv.Secret != c.Inv.Secret })}
	v.exchange(t, other, c2)
	v.claim(t, other, c2)
	// D is revoked.
	wantStatus(t, "revoke", v.revoke(other, d.PID), http.StatusOK)
	wantStatus(t, "agree", v.postEvent(base, a, "rest-a-2", "agree", ""), http.StatusCreated)
	wantStatus(t, "agree", v.postEvent(other, b, "rest-b-2", "agree", ""), http.StatusCreated)
	art := v.get(agentURL(base, a.Inv.InvitationID, "artifact"), hdr("Authorization", participantAuth(a.Token)))
	wantStatus(t, "artifact", art, http.StatusOK)
	// A session that was never used for a claim.
	spare := &member{Inv: c2.Inv}
	v.exchange(t, base, spare)
	settleOutbox(t, v.db)

	secrets := map[string]string{"operator token": v.op, "token key": v.c.Config.TokenKey}
	for i, m := range []*member{a, b, c, d, c2, spare} {
		secrets[fmt.Sprintf("member %d secret", i)] = m.Inv.Secret
		secrets[fmt.Sprintf("member %d proof", i)] = m.Inv.Proof
		if m.Session != "" {
			secrets[fmt.Sprintf("member %d session", i)] = m.Session
		}
		if m.Token != "" {
			secrets[fmt.Sprintf("member %d participant token", i)] = m.Token
		}
	}
	for _, inv := range v.mail.invites(c.Inv.InvitationID) {
		secrets["C's email "+filepath.Base(inv.File)+" secret"] = inv.Secret
		secrets["C's email "+filepath.Base(inv.File)+" proof"] = inv.Proof
	}

	haystacks := map[string]string{"the database (SELECT of every column)": dumpBySelect(t, v)}
	if dump, err := pgDump(v.dbURL); err == nil {
		haystacks["pg_dump"] = dump
	} else {
		t.Logf("pg_dump not used: %v", err)
	}
	for _, r := range v.c.Replicas {
		haystacks[fmt.Sprintf("replica %d's log", r.Index)] = r.Logs()
	}
	// Positive controls: the dumps do hold what is stored, the hashes.
	for where, hay := range haystacks {
		if !strings.Contains(where, "log") && !strings.Contains(hay, sha256Hex(a.Token)) {
			t.Fatalf("%s does not hold the stored hash of A's participant token: the dump is not complete", where)
		}
	}
	for where, hay := range haystacks {
		for what, s := range secrets {
			for form, needle := range encodings(s) {
				if strings.Contains(hay, needle) {
					t.Errorf("%s holds the %s in clear (%s)", where, what, form)
				}
			}
		}
	}
	t.Logf("searched %d secrets in %d places", len(secrets), len(haystacks))
	checkInvariants(t, v)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// encodings are the forms a credential could be stored in by mistake.
func encodings(s string) map[string]string {
	out := map[string]string{"as is": s, "hex of the text": hex.EncodeToString([]byte(s))}
	raw := s
	for _, p := range []string{"csi_", "css_", "csp_", "cso_", "cok_"} {
		raw = strings.TrimPrefix(raw, p)
	}
	if raw != s {
		out["without its prefix"] = raw
	}
	if b, err := base64.RawURLEncoding.DecodeString(raw); err == nil && len(b) >= 16 {
		out["decoded bytes as hex"] = hex.EncodeToString(b)
		out["decoded bytes as base64"] = base64.StdEncoding.EncodeToString(b)
	}
	if b, err := hex.DecodeString(raw); err == nil && len(b) >= 16 {
		out["decoded bytes as base64"] = base64.StdEncoding.EncodeToString(b)
	}
	return out
}

// dumpBySelect returns the text of every row of every table of every user
// schema.
func dumpBySelect(t *testing.T, v *venue) string {
	t.Helper()
	ctx := context.Background()
	rows, err := v.db.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	var names [][2]string
	for rows.Next() {
		var s, n string
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		names = append(names, [2]string{s, n})
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	var b strings.Builder
	for _, n := range names {
		rs, err := v.db.Query(ctx, fmt.Sprintf(`SELECT x::text FROM %q.%q x`, n[0], n[1]))
		if err != nil {
			t.Fatal(err)
		}
		for rs.Next() {
			var line string
			if err := rs.Scan(&line); err != nil {
				t.Fatal(err)
			}
			b.WriteString(n[1] + ": " + line + "\n")
		}
		if rs.Err() != nil {
			t.Fatal(rs.Err())
		}
	}
	return b.String()
}

// pgDump runs pg_dump --data-only on the database when it is installed.
func pgDump(url string) (string, error) {
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
		if len(matches) == 0 {
			return "", err
		}
		bin = matches[len(matches)-1]
	}
	// Row-level security binds the service's role, the table owner: the
	// dump asks for it (--enable-row-security) with the scope under which
	// the service's own pool sees every workspace, as a backup does.
	cmd := exec.Command(bin, "--data-only", "--enable-row-security", "--dbname="+url)
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c consensus.scope=service")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w", bin, err)
	}
	return string(out), nil
}
