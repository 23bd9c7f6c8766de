package passkey_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/consensus-md/consensus/internal/passkey"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/servertest"
)

// present lists the operators not removed, by address: id and role.
func present(t *testing.T, c client) map[string][2]string {
	t.Helper()
	status, body := c.do(http.MethodGet, "/console/api/operators", "")
	var list struct {
		Operators []struct {
			ID, Email, Role string
			RemovedAt       *string
		}
	}
	if err := json.Unmarshal([]byte(body), &list); status != 200 || err != nil {
		t.Fatalf("operators: %d %s (%v)", status, body, err)
	}
	out := map[string][2]string{}
	for _, o := range list.Operators {
		if o.RemovedAt == nil {
			out[o.Email] = [2]string{o.ID, o.Role}
		}
	}
	return out
}

// owners counts the workspace's owners not removed.
func owners(t *testing.T, c client) int {
	t.Helper()
	n := 0
	for _, o := range present(t, c) {
		if o[1] == "owner" {
			n++
		}
	}
	return n
}

// atOnce sends a's and b's requests at the same instant and returns their
// statuses.
func atOnce(a, b func() (int, string)) (int, int) {
	start := make(chan struct{})
	var sa, sb int
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); <-start; sa, _ = a() }()
	go func() { defer wg.Done(); <-start; sb, _ = b() }()
	close(start)
	wg.Wait()
	return sa, sb
}

// TestTwoOwnersCannotLeaveNoOwner: two owners who demote or remove each
// other through the console at the same instant: one is answered 200, the
// other is refused (400, a workspace keeps at least one owner; or, when
// the first change committed before its request was authenticated, 403 or
// 401 as a viewer or a removed operator), and one owner is left, in every
// trial.
func TestTwoOwnersCannotLeaveNoOwner(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{DatabaseURL: pgtest.URL(t), Origin: "http://localhost"})
	session, err := passkey.New(s.Origin).Enroll(s.URL, workspace(t, s.DatabaseURL, s.Origin))
	if err != nil {
		t.Fatal(err)
	}
	survivor, survivorEmail := client{t, s.URL, s.Origin, session}, "olga@acme.example"
	// second invites and enrolls a new owner.
	second := func(email string) client {
		if status, body := survivor.do(http.MethodPost, "/console/api/operators", `{"email":"`+email+`","role":"owner"}`); status != 201 {
			t.Fatalf("invite: %d %s", status, body)
		}
		ss, err := passkey.New(s.Origin).Enroll(s.URL, emailedToken(t, s.Maildir, email))
		if err != nil {
			t.Fatal(err)
		}
		return client{t, s.URL, s.Origin, ss}
	}
	other, otherEmail := second("bea@acme.example"), "bea@acme.example"
	check := func(what string, sa, sb int) {
		t.Helper()
		if n := owners(t, survivor); n != 1 || (sa == 200) == (sb == 200) {
			t.Fatalf("%s: answered %d and %d, %d owners left", what, sa, sb, n)
		}
	}
	// Demotions: each sets the other's role to viewer; whoever is still an
	// owner afterwards makes the other an owner again.
	for trial := 0; trial < 12; trial++ {
		a, b := survivor, other
		ops := present(t, a)
		aID, bID := ops[survivorEmail][0], ops[otherEmail][0]
		sa, sb := atOnce(
			func() (int, string) {
				return a.do(http.MethodPut, "/console/api/operators/"+bID+"/role", `{"role":"viewer"}`)
			},
			func() (int, string) {
				return b.do(http.MethodPut, "/console/api/operators/"+aID+"/role", `{"role":"viewer"}`)
			})
		check("demotions", sa, sb)
		winner, loserID := b, aID // a was refused: b demoted a
		if sa == 200 {
			winner, loserID = a, bID
		}
		if status, body := winner.do(http.MethodPut, "/console/api/operators/"+loserID+"/role", `{"role":"owner"}`); status != 200 {
			t.Fatalf("promote again: %d %s", status, body)
		}
	}
	// Removals: each removes the other; the one left invites the next.
	for trial := 0; trial < 6; trial++ {
		a, b := survivor, other
		ops := present(t, a)
		aID, bID := ops[survivorEmail][0], ops[otherEmail][0]
		sa, sb := atOnce(
			func() (int, string) { return a.do(http.MethodDelete, "/console/api/operators/"+bID, "") },
			func() (int, string) { return b.do(http.MethodDelete, "/console/api/operators/"+aID, "") })
		if sa != 200 {
			survivor, survivorEmail = b, otherEmail
		}
		check("removals", sa, sb)
		otherEmail = "next" + string(rune('a'+trial)) + "@acme.example"
		other = second(otherEmail)
	}
}
