package passkey_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/passkey"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/servertest"
)

type auditPage struct {
	Entries []struct {
		Seq    int64 `json:"seq"`
		Action string
		Actor  struct{ Kind, ID, Name string }
		Target map[string]string `json:"targets"`
	} `json:"entries"`
	NextAfter  *int64 `json:"nextAfter"`
	NextBefore *int64 `json:"nextBefore"`
}

// TestAuditFiltersAndPagesOnTheServer: the console's audit route and the
// operator API's filter by actor, action and agreement in the database and
// page the matches, newest first with before or oldest first with after,
// so a filter finds entries however far back they lie; bad parameters are
// refused with the field named.
func TestAuditFiltersAndPagesOnTheServer(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{DatabaseURL: pgtest.URL(t), Origin: "http://localhost"})
	session, err := passkey.New(s.Origin).Enroll(s.URL, workspace(t, s.DatabaseURL, s.Origin))
	if err != nil {
		t.Fatal(err)
	}
	owner := client{t, s.URL, s.Origin, session}
	// Three agreements, then many entries of other kinds on top of them.
	var ids []string
	for i := 0; i < 3; i++ {
		status, body := owner.do(http.MethodPost, "/console/api/agreements", agreementBody)
		if status != 201 {
			t.Fatalf("create: %d %s", status, body)
		}
		var a struct{ AgreementID string }
		_ = json.Unmarshal([]byte(body), &a)
		ids = append(ids, a.AgreementID)
	}
	var auditKey string // the first key reads the audit log through the operator API
	for i := 0; i < 30; i++ {
		status, body := owner.do(http.MethodPost, "/console/api/keys", fmt.Sprintf(`{"name":"k%d","scopes":["audit:read"]}`, i))
		if status != 201 {
			t.Fatalf("key: %d %s", status, body)
		}
		if i == 0 {
			var k struct{ Token string }
			_ = json.Unmarshal([]byte(body), &k)
			auditKey = k.Token
		}
	}
	read := func(query string) auditPage {
		t.Helper()
		status, body := owner.do(http.MethodGet, "/console/api/audit?"+query, "")
		if status != 200 {
			t.Fatalf("audit?%s: %d %s", query, status, body)
		}
		var p auditPage
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// Newest first, two at a time: the three creations in two pages,
	// though 30 key entries are newer.
	p := read("order=newest&limit=2&action=agreement.create")
	if len(p.Entries) != 2 || p.NextBefore == nil || p.NextAfter != nil || p.Entries[0].Seq <= p.Entries[1].Seq {
		t.Fatalf("first page: %+v", p)
	}
	last := read(fmt.Sprintf("order=newest&limit=2&action=agreement.create&before=%d", *p.NextBefore))
	if len(last.Entries) != 1 || last.NextBefore != nil || last.Entries[0].Seq >= p.Entries[1].Seq || last.Entries[0].Target["agreementId"] != ids[0] {
		t.Fatalf("last page: %+v", last)
	}
	// Oldest first with after.
	p = read("limit=2&action=agreement.create")
	if len(p.Entries) != 2 || p.NextAfter == nil || p.Entries[0].Target["agreementId"] != ids[0] {
		t.Fatalf("oldest first: %+v", p)
	}
	if p = read(fmt.Sprintf("limit=2&action=agreement.create&after=%d", *p.NextAfter)); len(p.Entries) != 1 || p.NextAfter != nil {
		t.Fatalf("oldest first, second page: %+v", p)
	}
	// By agreement; by a piece of the actor's name in any case, or its id.
	if p = read("agreementId=" + ids[1]); len(p.Entries) != 1 || p.Entries[0].Action != "agreement.create" {
		t.Fatalf("by agreement: %+v", p)
	}
	p = read("actor=OLGA&action=operator.enroll")
	if len(p.Entries) != 1 || p.Entries[0].Actor.Kind != "operator" {
		t.Fatalf("by a piece of the name: %+v", p)
	}
	if q := read("actor=" + p.Entries[0].Actor.ID + "&limit=1000"); len(q.Entries) != 34 {
		t.Fatalf("by the actor's id: %d entries, want 34 (enroll, 3 creations, 30 keys)", len(q.Entries))
	}
	if p = read("actor=nobody"); len(p.Entries) != 0 || p.NextAfter != nil {
		t.Fatalf("no match: %+v", p)
	}

	// The operator API shares the filters (through the contract-checking client).
	for _, c := range []struct {
		query string
		want  int
	}{{"action=agreement.create", 3}, {"order=newest&limit=1&agreementId=" + ids[2], 1}, {"action=key.create&actor=olga", 30}} {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/v1/admin/audit?"+c.query, nil)
		req.Header.Set("Authorization", "Bearer "+auditKey)
		resp, err := s.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var p auditPage
		_ = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(p.Entries) != c.want {
			t.Errorf("admin audit?%s: %d, %d entries, want %d", c.query, resp.StatusCode, len(p.Entries), c.want)
		}
	}

	for query, field := range map[string]string{
		"order=sideways":        "order",
		"order=newest&after=3":  "after",
		"before=3":              "before",
		"agreementId=not-an-id": "agreementId",
		"limit=0":               "limit",
		"actor=" + url.QueryEscape(strings.Repeat("x", 201)): "actor",
	} {
		if status, body := owner.do(http.MethodGet, "/console/api/audit?"+query, ""); status != 400 || !strings.Contains(body, `"field":"`+field+`"`) {
			t.Errorf("audit?%.40s: %d %s", query, status, body)
		}
	}
}
