package passkey_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/consensus-md/consensus/internal/passkey"
	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/servertest"
)

// db opens a connection that sees every workspace's rows, as the service's
// own main pool does, to read what the console stored.
func db(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, "SELECT set_config('consensus.scope', 'service', false)"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// people counts an operator's passkeys, sessions and used links.
type people struct{ passkeys, sessions, used int }

func countPeople(t *testing.T, conn *pgx.Conn, email string) people {
	t.Helper()
	var p people
	err := conn.QueryRow(context.Background(), `
		SELECT (SELECT count(*) FROM operator_passkeys k WHERE k.operator_id = o.id),
		       (SELECT count(*) FROM operator_sessions s WHERE s.operator_id = o.id),
		       (SELECT count(*) FROM operator_enrollments e WHERE e.operator_id = o.id AND e.used_at IS NOT NULL)
		FROM operators o WHERE o.email = $1`, email).Scan(&p.passkeys, &p.sessions, &p.used)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// refusedWith checks that err is the console's answer status with the
// problem code.
func refusedWith(t *testing.T, what string, err error, status, code string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), ": "+status+" ") || !strings.Contains(err.Error(), `"code":"`+code+`"`) {
		t.Errorf("%s: want %s %s, got %v", what, status, code, err)
	}
}

// TestEnrollmentLinkUsedOrExpired: a link that enrolled once is refused
// with enrollment-used, at its first step and, for a ceremony begun before
// the link was used, at its last; a link past its 24 hours is refused with
// enrollment-expired, likewise. No refusal stores a passkey or a session
// or uses the link, and an unknown link stays a generic not-found.
func TestEnrollmentLinkUsedOrExpired(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{DatabaseURL: pgtest.URL(t), Origin: "http://localhost"})
	conn := db(t, s.DatabaseURL)
	token := workspace(t, s.DatabaseURL, s.Origin)

	// Two ceremonies begin on one link; the first to finish uses it.
	first, second := passkey.New(s.Origin), passkey.New(s.Origin)
	finishSecond, err := second.EnrollBegin(s.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	ownerSession, err := first.Enroll(s.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	want := people{passkeys: 1, sessions: 1, used: 1}
	if got := countPeople(t, conn, "olga@acme.example"); got != want {
		t.Fatalf("after enrolling: %+v, want %+v", got, want)
	}
	_, err = finishSecond()
	refusedWith(t, "finishing a ceremony on a link used meanwhile", err, "410", "enrollment-used")
	_, err = passkey.New(s.Origin).Enroll(s.URL, token)
	refusedWith(t, "enrolling again with a used link", err, "410", "enrollment-used")
	if got := countPeople(t, conn, "olga@acme.example"); got != want {
		t.Errorf("a refused enrollment changed something: %+v, want %+v", got, want)
	}
	if _, err := second.SignIn(s.URL); err == nil {
		t.Error("the refused authenticator signs in")
	}
	_, err = passkey.New(s.Origin).Enroll(s.URL, "coe_"+strings.Repeat("A", 43))
	refusedWith(t, "an unknown link", err, "404", "not-found")

	// An invited operator's link, begun in time and finished too late, and
	// begun too late.
	owner := client{t, s.URL, s.Origin, ownerSession}
	if status, body := owner.do(http.MethodPost, "/console/api/operators", `{"email":"eve@acme.example","role":"operator"}`); status != 201 {
		t.Fatalf("invite: %d %s", status, body)
	}
	eveToken := emailedToken(t, s.Maildir, "eve@acme.example")
	eve := passkey.New(s.Origin)
	finishLate, err := eve.EnrollBegin(s.URL, eveToken)
	if err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(24*time.Hour + time.Second)
	_, err = finishLate()
	refusedWith(t, "finishing after the link expired", err, "410", "enrollment-expired")
	_, err = passkey.New(s.Origin).Enroll(s.URL, eveToken)
	refusedWith(t, "beginning after the link expired", err, "410", "enrollment-expired")
	if got := countPeople(t, conn, "eve@acme.example"); got != (people{}) {
		t.Errorf("an expired link changed something: %+v", got)
	}
	if _, err := eve.SignIn(s.URL); err == nil {
		t.Error("the expired link's authenticator signs in")
	}
}

// TestConsoleSessionIdle: a session lives while it is used at least every
// 12 hours, however long in all, and is refused (and deleted) once idle
// for more than 12 hours; the clock is the daemon's, moved forward.
func TestConsoleSessionIdle(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{DatabaseURL: pgtest.URL(t), Origin: "http://localhost"})
	conn := db(t, s.DatabaseURL)
	session, err := passkey.New(s.Origin).Enroll(s.URL, workspace(t, s.DatabaseURL, s.Origin))
	if err != nil {
		t.Fatal(err)
	}
	c := client{t, s.URL, s.Origin, session}
	for i, step := range []time.Duration{0, 11 * time.Hour, 11*time.Hour + 59*time.Minute} {
		s.Clock.Advance(step)
		if status, body := c.do(http.MethodGet, "/console/api/session", ""); status != 200 {
			t.Fatalf("use %d, %s after the one before: %d %s", i, step, status, body)
		}
	}
	s.Clock.Advance(12*time.Hour + time.Second)
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/console/api/session", nil)
	req.AddCookie(session.Cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !regexp.MustCompile(`Max-Age=0|expires=Thu, 01 Jan 1970`).MatchString(resp.Header.Get("Set-Cookie")) {
		t.Errorf("after 12 h idle: %d, Set-Cookie %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
	if got := countPeople(t, conn, "olga@acme.example"); got.sessions != 0 {
		t.Errorf("the idle session is still stored: %+v", got)
	}
	// A change with the ended session is refused as well, and changes nothing.
	if status, _ := c.do(http.MethodPost, "/console/api/keys", `{"name":"late","scopes":["agreements:read"]}`); status != 401 {
		t.Errorf("a change after 12 h idle: %d", status)
	}
	var keys int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM api_keys").Scan(&keys); err != nil || keys != 0 {
		t.Errorf("keys after the refused change: %d %v", keys, err)
	}
}
