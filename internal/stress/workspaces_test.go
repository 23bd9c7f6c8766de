package stress

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/consensus-md/consensus/internal/audit"
	"github.com/consensus-md/consensus/internal/proctest"
)

// tenant is a workspace made by `consensusd workspace create`, with its
// owner key and the agreements the test created in it.
type tenant struct {
	name, id, token string
	agreements      []created
}

func (w *tenant) header() http.Header { return hdr("Authorization", "Bearer "+w.token) }

// createTenant runs the consensusd binary as an administrator would.
func createTenant(t *testing.T, v *venue, name string) *tenant {
	t.Helper()
	cmd := exec.Command(proctest.Binary(t), "workspace", "create", "--name", name, "--owner-email", "owner@"+name+".example", "--key", name+"-automation")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+v.dbURL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("consensusd workspace create: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^workspace\s+(\S+)\s+` + name + `$[\s\S]*^token\s+(cok_\S+)$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("consensusd workspace create printed:\n%s", out)
	}
	return &tenant{name: name, id: string(m[1]), token: string(m[2])}
}

// TestWorkspacesSideBySide: two workspaces made by the command line run
// agreements at once on three replicas, every request on a replica picked
// at random. Nothing crosses: each workspace's lists hold its own
// agreements only, every id of the other is 404 on every replica and every
// route, each audit log names only its own workspace and verifies, every
// stored row carries its agreement's workspace, and a pg_dump of the
// database holds no key, token or secret in clear.
func TestWorkspacesSideBySide(t *testing.T) {
	t.Parallel()
	v := newVenue(t, venueOpts{replicas: 3})
	rnd := rand.New(rand.NewPCG(seed(t), 1))
	var rmu sync.Mutex
	replica := func() string {
		rmu.Lock()
		defer rmu.Unlock()
		return v.url(rnd.IntN(3))
	}
	tenants := []*tenant{createTenant(t, v, "north"), createTenant(t, v, "south")}
	const perTenant = 4
	for _, w := range tenants {
		for i := 0; i < perTenant; i++ {
			r := v.post(replica()+"/api/v1/admin/agreements", w.header(), agreementBody(fmt.Sprintf("%s %d", w.name, i), "Decide together.", nil,
				spec{Name: "A", Required: true}, spec{Name: "B", Required: true}, spec{Name: "C", Required: false}))
			wantStatus(t, "create in "+w.name, r, http.StatusCreated)
			var c created
			if err := json.Unmarshal(r.Body, &c); err != nil {
				t.Fatal(err)
			}
			w.agreements = append(w.agreements, c)
		}
	}

	// Every participant of both workspaces at once: join, comment, agree,
	// each request on any replica.
	var wg sync.WaitGroup
	var secrets sync.Map
	for _, w := range tenants {
		for _, c := range w.agreements {
			for _, p := range c.Participants {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m := &member{Inv: v.mail.wait(t, p.InvitationID, nil)}
					v.exchange(t, replica(), m)
					v.claim(t, replica(), m)
					secrets.Store(m.Inv.Secret, true)
					secrets.Store(m.Inv.Proof, true)
					secrets.Store(m.Session, true)
					secrets.Store(m.Token, true)
					if !p.Required {
						return // the room may close before an optional participant speaks
					}
					wantStatus(t, "comment", v.postEvent(replica(), m, "c-"+m.PID, "comment", "From "+w.name+"."), http.StatusCreated)
					wantStatus(t, "agree", v.postEvent(replica(), m, "d-"+m.PID, "agree", ""), http.StatusCreated)
				}()
			}
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	for i, w := range tenants {
		other := tenants[1-i]
		for r := 0; r < 3; r++ {
			base := v.url(r)
			// Lists: exactly this workspace's agreements.
			list := v.get(base+"/api/v1/admin/agreements?limit=100", w.header())
			wantStatus(t, "list", list, http.StatusOK)
			var page struct {
				Agreements []struct{ AgreementID string }
			}
			if err := json.Unmarshal(list.Body, &page); err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, a := range page.Agreements {
				got[a.AgreementID] = true
			}
			if len(got) != perTenant {
				t.Errorf("replica %d: %s lists %d agreements, want %d", r, w.name, len(got), perTenant)
			}
			for _, c := range w.agreements {
				if !got[c.AgreementID] {
					t.Errorf("replica %d: %s's list lacks its agreement %s", r, w.name, c.AgreementID)
				}
			}
			// Every id of the other workspace: the generic 404.
			for _, c := range other.agreements {
				wantProblem(t, w.name+" reads "+other.name+"'s agreement", v.get(base+"/api/v1/admin/agreements/"+c.AgreementID, w.header()), 404, "not-found")
				p := c.Participants[2]
				wantProblem(t, w.name+" revokes "+other.name+"'s participant",
					v.do(request{Method: "POST", URL: base + "/api/v1/admin/participants/" + p.ParticipantID + "/revoke", Header: w.header()}), 404, "not-found")
				wantProblem(t, w.name+" resends "+other.name+"'s invitation",
					v.do(request{Method: "POST", URL: base + "/api/v1/admin/invitations/" + p.InvitationID + "/resend", Header: w.header()}), 404, "not-found")
				wantProblem(t, w.name+" amends "+other.name+"'s agreement",
					v.post(base+"/api/v1/admin/agreements/"+c.AgreementID+"/revisions", w.header(), []byte(`{"title":"Taken over"}`)), 404, "not-found")
			}
			// Each agreement reached in its own workspace.
			for _, c := range w.agreements {
				d := v.get(base+"/api/v1/admin/agreements/"+c.AgreementID, w.header())
				wantStatus(t, "get", d, http.StatusOK)
				if st := d.JSON(t)["outcome"].(map[string]any)["status"]; st != "reached" {
					t.Errorf("%s's agreement %s: outcome %v", w.name, c.AgreementID, st)
				}
			}
		}
		// The audit log: this workspace's entries only, a chain that
		// verifies, naming none of the other's agreements but in refusals.
		r := v.get(v.url(0)+"/api/v1/admin/audit?limit=1000", w.header())
		wantStatus(t, "audit", r, http.StatusOK)
		var page struct{ Entries []audit.Entry }
		if err := json.Unmarshal(r.Body, &page); err != nil {
			t.Fatal(err)
		}
		if _, err := audit.Verify(page.Entries); err != nil {
			t.Errorf("%s's audit chain: %v", w.name, err)
		}
		creates := 0
		for _, e := range page.Entries {
			if e.WorkspaceID != w.id {
				t.Errorf("%s's audit log holds an entry of workspace %s", w.name, e.WorkspaceID)
			}
			if e.Action == "agreement.create" && e.Result == "ok" {
				creates++
			}
		}
		if creates != perTenant {
			t.Errorf("%s's audit log records %d creations, want %d", w.name, creates, perTenant)
		}
	}

	// In the database, every row under an agreement carries the
	// agreement's workspace, and each workspace holds what it created.
	ctx := context.Background()
	parents := map[string]string{"sessions": "invitations a ON a.id = x.invitation_id", "outbox_attempts": "outbox a ON a.id = x.outbox_id"}
	for _, table := range []string{"revisions", "participants", "invitations", "sessions", "events", "artifacts", "outbox", "outbox_attempts", "records", "webhooks", "webhook_deliveries"} {
		parent, ok := parents[table]
		if !ok {
			parent = "agreements a ON a.id = x.agreement_id"
		}
		var n, all int
		err := v.db.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FILTER (WHERE x.workspace_id <> a.workspace_id), count(*) FROM %s x JOIN %s`, table, parent)).Scan(&n, &all)
		if err != nil || n != 0 {
			t.Errorf("%s: %d of %d rows in another workspace than their parent's (%v)", table, n, all, err)
		}
	}
	for _, w := range tenants {
		var n int
		if err := v.db.QueryRow(ctx, `SELECT count(*) FROM agreements WHERE workspace_id = $1`, w.id).Scan(&n); err != nil || n != perTenant {
			t.Errorf("%s holds %d agreements in the database (%v)", w.name, n, err)
		}
	}

	// pg_dump: every key is stored as its hash only.
	dump, err := pgDump(v.dbURL)
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	for _, w := range tenants {
		if !strings.Contains(dump, sha256Hex(w.token)) {
			t.Fatalf("pg_dump lacks the stored hash of %s's key: the dump is not complete", w.name)
		}
		for form, needle := range encodings(w.token) {
			if strings.Contains(dump, needle) {
				t.Errorf("pg_dump holds %s's key in clear (%s)", w.name, form)
			}
		}
	}
	secrets.Store(v.op, true)
	secrets.Range(func(k, _ any) bool {
		for form, needle := range encodings(k.(string)) {
			if strings.Contains(dump, needle) {
				t.Errorf("pg_dump holds a participant credential in clear (%s)", form)
			}
		}
		return true
	})
	if strings.Contains(dump, "cok_") {
		t.Error("pg_dump holds a cok_ token")
	}
	t.Logf("2 workspaces × %d agreements × 3 participants on 3 replicas; pg_dump of %d bytes holds no key or token", perTenant, len(dump))
}
