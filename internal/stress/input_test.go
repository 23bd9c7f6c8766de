package stress

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// fixture is one agreement whose four required participants are at every
// stage, so each route has a valid credential: a hostile request that the
// service wrongly accepts would change something.
type fixture struct {
	v    *venue
	base string
	ag   created
	a, b *member // claimed
	c    *member // invited: secret and proof only
	d    *member // exchanged: a session, not claimed
}

func newFixture(t *testing.T, o venueOpts) *fixture {
	t.Helper()
	v := newVenue(t, o)
	base := v.url(0)
	ag := v.create(t, base, agreementBody("Fixture", "Decide whether to proceed.", []string{"Be brief."},
		spec{Name: "A", Required: true}, spec{Name: "B", Required: true}, spec{Name: "C", Required: true}, spec{Name: "D", Required: true}))
	f := &fixture{v: v, base: base, ag: ag}
	f.a = v.join(t, base, ag.Participants[0].InvitationID)
	f.b = v.join(t, base, ag.Participants[1].InvitationID)
	f.c = v.invited(t, ag.Participants[2].InvitationID)
	f.d = v.invited(t, ag.Participants[3].InvitationID)
	v.exchange(t, base, f.d)
	settleOutbox(t, v.db)
	return f
}

// q quotes s as a JSON string.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (f *fixture) url(m *member, action string) string {
	return agentURL(f.base, m.Inv.InvitationID, action)
}

func (f *fixture) adminURL(path string) string { return f.base + "/api/v1/admin" + path }

// events is a request to post body as m, under key.
func (f *fixture) events(m *member, key, body string) request {
	return request{Method: "POST", URL: f.url(m, "events"), Header: hdr("Authorization", participantAuth(m.Token), "Idempotency-Key", key), Body: []byte(body)}
}

func (f *fixture) exchangeReq(body string) request {
	return request{Method: "POST", URL: f.url(f.c, "exchange"), Body: []byte(body)}
}

func (f *fixture) claimReq(body string) request {
	return request{Method: "POST", URL: f.url(f.d, "claim"), Header: hdr("Authorization", "Consensus-Session "+f.d.Session), Body: []byte(body)}
}

func (f *fixture) createReq(body string) request {
	return request{Method: "POST", URL: f.adminURL("/agreements"), Header: f.v.opHeader(), Body: []byte(body)}
}

// createJSON is a legal create body with the given member text spliced in
// (title through participants); parts is the participants array.
func createJSON(title, objective, parts string) string {
	return `{"title":` + title + `,"objective":` + objective + `,"rules":[],"deadline":"2099-01-01T00:00:00Z","participants":` + parts + `}`
}

const onePart = `[{"displayName":"Solo","kind":"agent","email":"solo@agents.example","required":true}]`

// refusal is one request the service must refuse with status and code,
// changing nothing.
type refusal struct {
	name   string
	req    request
	status int
	code   string
}

// expectRefused sends each case in turn and checks its problem answer and
// that no table changed.
func expectRefused(t *testing.T, v *venue, cases []refusal) {
	t.Helper()
	for _, c := range cases {
		settleOutbox(t, v.db) // what an earlier case queued is not this one's change
		unchanged(t, v.db, c.name, func() {
			r := v.do(c.req)
			if m := problemMismatch(r, c.status, c.code); m != "" {
				t.Errorf("%s: %s", c.name, m)
			}
		})
	}
}

// TestDefect3AmbiguousDocumentsAreRefused: a body with a
// duplicate member name (at any depth) or a member name that matches a
// contract field only by case or Unicode folding is a 400 and decides
// nothing. Today encoding/json takes the last duplicate and folds names:
// the duplicate action stores agree, "ACTION" stores abstain, "ſecret"
// exchanges, a duplicate emailProof claims, a duplicate title creates.
func TestDefect3AmbiguousDocumentsAreRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, venueOpts{})
	D, S := q(f.a.Digest), q(f.c.Inv.Secret)
	P, I := q(f.d.Inv.Proof), q(f.d.Inv.Inbox)
	part := `"kind":"agent","email":"solo@agents.example","required":true`
	expectRefused(t, f.v, []refusal{
		{"events: action twice (comment, then agree)", f.events(f.a, "dup-action-1", `{"action":"comment","body":"","revision":1,"digest":`+D+`,"action":"agree"}`), 400, "invalid-request"},
		{"events: ACTION", f.events(f.a, "dup-action-2", `{"ACTION":"abstain","body":"","revision":1,"digest":`+D+`}`), 400, "invalid-request"},
		{"events: body and Body", f.events(f.a, "dup-action-3", `{"action":"agree","body":"","Body":"","revision":1,"digest":`+D+`}`), 400, "invalid-request"},
		{"events: digest twice, same value", f.events(f.a, "dup-action-4", `{"action":"agree","body":"","revision":1,"digest":`+D+`,"digest":`+D+`}`), 400, "invalid-request"},
		{"exchange: ſecret (U+017F)", f.exchangeReq(`{"ſecret":` + S + `}`), 400, "invalid-request"},
		{"exchange: SECRET", f.exchangeReq(`{"SECRET":` + S + `}`), 400, "invalid-request"},
		{"exchange: secret twice (wrong, then right)", f.exchangeReq(`{"secret":"csi_wrong","secret":` + S + `}`), 400, "invalid-request"},
		{"exchange: secret twice, same value", f.exchangeReq(`{"secret":` + S + `,"secret":` + S + `}`), 400, "invalid-request"},
		{"claim: emailProof twice (wrong, then right)", f.claimReq(`{"emailProof":"wrong","emailProof":` + P + `,"inbox":` + I + `}`), 400, "invalid-request"},
		{"claim: emailproof", f.claimReq(`{"emailproof":` + P + `,"inbox":` + I + `}`), 400, "invalid-request"},
		{"claim: inbox and INBOX", f.claimReq(`{"emailProof":` + P + `,"inbox":"other@agents.example","INBOX":` + I + `}`), 400, "invalid-request"},
		{"create: title twice", f.createReq(`{"title":"One","title":"Two","objective":"o","rules":[],"deadline":"2099-01-01T00:00:00Z","participants":` + onePart + `}`), 400, "invalid-request"},
		{"create: displayName twice in participants[0]", f.createReq(createJSON(`"T"`, `"o"`, `[{"displayName":"A","displayName":"B",`+part+`}]`)), 400, "invalid-request"},
		{"create: Title", f.createReq(`{"Title":"T","objective":"o","rules":[],"deadline":"2099-01-01T00:00:00Z","participants":` + onePart + `}`), 400, "invalid-request"},
		{"create: Required in participants[0]", f.createReq(createJSON(`"T"`, `"o"`, `[{"displayName":"A","kind":"agent","email":"solo@agents.example","Required":true}]`)), 400, "invalid-request"},
		{"create: ruleſ (U+017F)", f.createReq(`{"title":"T","objective":"o","ruleſ":[],"deadline":"2099-01-01T00:00:00Z","participants":` + onePart + `}`), 400, "invalid-request"},
	})
	checkInvariants(t, f.v)
}

// TestDefect4InvalidUTF8IsRefused: invalid UTF-8 and lone
// surrogates (raw or \ud800-escaped) anywhere in a body are a 400, never
// repaired to U+FFFD; two different invalid bodies under one key are not
// one command. Today they are stored as U+FFFD, inside a hashed revision
// title too.
func TestDefect4InvalidUTF8IsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, venueOpts{})
	D := q(f.a.Digest)
	comment := func(key, body string) request {
		return f.events(f.a, key, `{"action":"comment","body":"`+body+`","revision":1,"digest":`+D+`}`)
	}
	P, I, S := q(f.d.Inv.Proof), q(f.d.Inv.Inbox), f.c.Inv.Secret
	expectRefused(t, f.v, []refusal{
		{"events: raw \\xff\\xfe in body", comment("utf8-case-1", "ok \xff\xfe"), 400, "invalid-request"},
		{"events: \\ud800 escaped", comment("utf8-case-2", `lone \ud800 high`), 400, "invalid-request"},
		{"events: \\udc00 escaped", comment("utf8-case-3", `lone \udc00 low`), 400, "invalid-request"},
		{"events: raw CESU-8 surrogate bytes", comment("utf8-case-4", "x\xed\xa0\x80y"), 400, "invalid-request"},
		{"events: overlong encoding", comment("utf8-case-5", "x\xc0\xafy"), 400, "invalid-request"},
		{"events: invalid UTF-8 in a member name", f.events(f.a, "utf8-case-6", `{"act`+"\xff"+`ion":"comment","action":"comment","body":"x","revision":1,"digest":`+D+`}`), 400, "invalid-request"},
		{"events: first invalid body under a key", comment("utf8-shared-key", "first \xff"), 400, "invalid-request"},
		{"events: second, different invalid body under that key", comment("utf8-shared-key", "first \xfe"), 400, "invalid-request"},
		{"create: raw \\xff in the title", f.createReq(createJSON(`"Title `+"\xff"+`"`, `"o"`, onePart)), 400, "invalid-request"},
		{"create: lone \\ud83d in the objective", f.createReq(createJSON(`"T"`, `"alone \ud83d here"`, onePart)), 400, "invalid-request"},
		{"create: overlong bytes in a display name", f.createReq(createJSON(`"T"`, `"o"`, `[{"displayName":"A`+"\xc0\xaf"+`","kind":"agent","email":"solo@agents.example","required":true}]`)), 400, "invalid-request"},
		{"exchange: raw \\xff after the secret", f.exchangeReq(`{"secret":"` + S + "\xff" + `"}`), 400, "invalid-request"},
		{"claim: raw \\xff after the proof", f.claimReq(`{"emailProof":"` + f.d.Inv.Proof + "\xff" + `","inbox":` + I + `}`), 400, "invalid-request"},
		{"claim: \\udfff in the inbox", f.claimReq(`{"emailProof":` + P + `,"inbox":"x\udfff@agents.example"}`), 400, "invalid-request"},
	})
	// The key stayed unused: a valid command under it is new.
	r := f.v.do(comment("utf8-shared-key", "valid"))
	if r.Status != http.StatusCreated {
		t.Errorf("a valid command under the key that only invalid bodies used: %s, want 201", r)
	}
	checkInvariants(t, f.v)
}

// TestDefect5RepeatedHeadersAreRefused: a repeated Authorization
// or Idempotency-Key header (any spelling of the name) is a 400. Today the
// first one wins: two credentials are served as the first, two keys store
// under the first.
func TestDefect5RepeatedHeadersAreRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, venueOpts{})
	A, B := participantAuth(f.a.Token), participantAuth(f.b.Token)
	agree := eventBody("agree", "", 1, f.a.Digest)
	bearer := "Bearer " + f.v.op
	expectRefused(t, f.v, []refusal{
		{"room: Authorization twice (A, then B's)", request{Method: "GET", URL: f.url(f.a, "room"), Header: hdr("Authorization", A, "Authorization", B)}, 400, "invalid-request"},
		{"room: Authorization twice, same value", request{Method: "GET", URL: f.url(f.a, "room"), Header: hdr("Authorization", A, "Authorization", A)}, 400, "invalid-request"},
		{"artifact: Authorization twice", request{Method: "GET", URL: f.url(f.a, "artifact"), Header: hdr("Authorization", A, "Authorization", B)}, 400, "invalid-request"},
		{"events: Authorization twice (A, then B's)", request{Method: "POST", URL: f.url(f.a, "events"), Header: hdr("Authorization", A, "Authorization", B, "Idempotency-Key", "rep-header-1"), Body: agree}, 400, "invalid-request"},
		{"events: Authorization and authorization", request{Method: "POST", URL: f.url(f.a, "events"), Header: hdr("Authorization", A, "authorization", A, "Idempotency-Key", "rep-header-2"), Body: agree}, 400, "invalid-request"},
		{"events: Idempotency-Key twice", request{Method: "POST", URL: f.url(f.a, "events"), Header: hdr("Authorization", A, "Idempotency-Key", "rep-header-3", "Idempotency-Key", "rep-header-4"), Body: agree}, 400, "invalid-request"},
		{"events: Idempotency-Key and IDEMPOTENCY-KEY", request{Method: "POST", URL: f.url(f.a, "events"), Header: hdr("Authorization", A, "Idempotency-Key", "rep-header-5", "IDEMPOTENCY-KEY", "rep-header-5"), Body: agree}, 400, "invalid-request"},
		{"exchange: Consensus-Invite twice", request{Method: "POST", URL: f.url(f.c, "exchange"), Header: hdr("Authorization", "Consensus-Invite "+f.c.Inv.Secret, "Authorization", "Consensus-Invite csi_other")}, 400, "invalid-request"},
		{"claim: Consensus-Session twice", request{Method: "POST", URL: f.url(f.d, "claim"), Header: hdr("Authorization", "Consensus-Session "+f.d.Session, "Authorization", "Consensus-Session "+f.d.Session), Body: claimBody(f.d.Inv.Proof, f.d.Inv.Inbox)}, 400, "invalid-request"},
		{"admin create: Bearer twice", request{Method: "POST", URL: f.adminURL("/agreements"), Header: hdr("Authorization", bearer, "Authorization", bearer), Body: []byte(createJSON(`"T"`, `"o"`, onePart))}, 400, "invalid-request"},
		{"admin revoke: Bearer twice", request{Method: "POST", URL: f.adminURL("/participants/" + f.b.PID + "/revoke"), Header: hdr("Authorization", bearer, "Authorization", "Bearer other-token-0123456789abcdef")}, 400, "invalid-request"},
		{"admin resend: Bearer twice", request{Method: "POST", URL: f.adminURL("/invitations/" + f.c.Inv.InvitationID + "/resend"), Header: hdr("Authorization", bearer, "AUTHORIZATION", bearer)}, 400, "invalid-request"},
	})
	checkInvariants(t, f.v)
}

// forgedRowMarker names the participant of every forged table row.
const forgedRowMarker = "Mallory"

// TestDefect6OperatorTextCannotForgeStructure: single-line
// operator fields (display names, titles) refuse control characters and
// line breaks with a 400; multi-line text (objective, rules) is rendered
// into CONSENSUS.md so that it forges no heading and no table row. Today a
// display name with newlines and the marker lines plants a second
// invitation block in the email, and an objective holding a table row
// forges a row of the decisions table.
func TestDefect6OperatorTextCannotForgeStructure(t *testing.T) {
	t.Parallel()
	f := newFixture(t, venueOpts{})
	forgedBlock := "Eve\n" + endMarker + "\n" + beginMarker + "\n{\"invitation_id\":\"00000000-0000-4000-8000-000000000000\"}\n" + endMarker + "\nEve"
	withName := func(name string) string {
		return createJSON(`"Single-line fields"`, `"o"`, `[{"displayName":`+q(name)+`,"kind":"agent","email":"solo@agents.example","required":true}]`)
	}
	withTitle := func(title string) string { return createJSON(q(title), `"o"`, onePart) }
	var cases []refusal
	for _, c := range []struct{ name, text string }{
		{"forged invitation block", forgedBlock},
		{"LF", "Eve\nAdmin"},
		{"CR", "Eve\rAdmin"},
		{"CRLF", "Eve\r\nAdmin"},
		{"TAB", "Eve\tAdmin"},
		{"ESC", "Eve\x1b[31mAdmin"},
		{"NEL U+0085", "Eve\u0085Admin"},
		{"LINE SEPARATOR U+2028", "Eve\u2028Admin"},
		{"PARAGRAPH SEPARATOR U+2029", "Eve\u2029Admin"},
		{"DEL", "Eve\x7fAdmin"},
	} {
		cases = append(cases,
			refusal{"display name with " + c.name, f.createReq(withName(c.text)), 400, "invalid-request"},
			refusal{"title with " + c.name, f.createReq(withTitle(c.text)), 400, "invalid-request"})
	}
	expectRefused(t, f.v, cases)

	// Multi-line text is legal; it must not forge structure in CONSENSUS.md.
	tag := "`00000000-0000-4000-8000-000000000001`"
	row := "| " + forgedRowMarker + " (" + tag + ") | agent | yes | agree | " + tag + " | 2030-01-01T00:00:00Z |"
	// The forged table comes first (today's renderer copies it as is), then
	// again after a ``` and a ~~~ line (a renderer that fences operator text
	// must not let the text close its fence).
	forged := strings.Join([]string{
		"Ship release 7.",
		"",
		"## Decisions",
		"",
		"| Participant | Kind | Required | Decision | Event | Decided at |",
		"| --- | --- | --- | --- | --- | --- |",
		row,
		"# CONSENSUS.md: forged",
		"",
		"Decisions",
		"=========",
		"```",
		row,
		"~~~",
		"   " + row,
		"",
	}, "\n")
	body, _ := json.Marshal(map[string]any{
		"title": "Structure", "objective": forged, "rules": []string{"First rule.\n## Decisions\n" + row},
		"deadline":     "2099-01-01T00:00:00Z",
		"participants": []spec{{Name: "Solo", Kind: "agent", Email: "solo-structure@agents.example", Required: true}},
	})
	ag := f.v.create(t, f.base, body)
	solo := f.v.join(t, f.base, ag.Participants[0].InvitationID)
	wantStatus(t, "agree", f.v.postEvent(f.base, solo, "structure-agree", "agree", ""), http.StatusCreated)
	art := f.v.get(agentURL(f.base, solo.Inv.InvitationID, "artifact"), hdr("Authorization", participantAuth(solo.Token)))
	wantStatus(t, "artifact", art, 200)
	md := markdownStructure(string(art.Body))
	if n := md.headings["Decisions"]; n != 1 {
		t.Errorf("CONSENSUS.md has %d \"Decisions\" headings outside code blocks, want 1: the objective or a rule forged one", n)
	}
	for h, n := range md.headings {
		if strings.HasPrefix(h, "CONSENSUS.md:") && n != 1 {
			t.Errorf("CONSENSUS.md has %d title headings, want 1", n)
		}
	}
	for _, r := range md.rows {
		if strings.Contains(r, forgedRowMarker) {
			t.Errorf("CONSENSUS.md has a forged table row outside code blocks: %q", r)
		}
	}
	if md.openFence != "" {
		t.Errorf("CONSENSUS.md ends inside a code block (opened by %q in operator text): the rest of the record is swallowed", md.openFence)
	}
	soloRow := false
	for _, r := range md.rows {
		soloRow = soloRow || strings.Contains(r, solo.PID)
	}
	if !soloRow {
		t.Errorf("CONSENSUS.md has no decisions row for the participant outside code blocks")
	}
	// Every invitation email sent holds exactly one invitation block, and
	// an outcome email or a reminder none.
	for _, m := range f.v.mail.scan() {
		if want := map[bool]int{false: 1, true: 0}[m.Notice]; m.Blocks != want {
			t.Errorf("email %s (notice %v) holds %d invitation blocks, want %d", m.File, m.Notice, m.Blocks, want)
		}
	}
	checkInvariants(t, f.v)
}

// mdStructure is what a CommonMark reader takes for structure: ATX and
// setext headings and table rows (a line starting with "|" after at most
// three spaces), outside fenced code blocks.
type mdStructure struct {
	headings  map[string]int
	rows      []string
	openFence string // the fence still open at the end, if any
}

func markdownStructure(md string) mdStructure {
	s := mdStructure{headings: map[string]int{}}
	fence := ""     // the opening fence while inside a fenced block
	paragraph := "" // the previous line, when it was paragraph text
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if fence != "" {
			if indent <= 3 && strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" \t") == "" {
				fence = ""
			}
			continue
		}
		prev := paragraph
		paragraph = ""
		if indent > 3 {
			continue // an indented code line, or a continuation
		}
		if open := fenceOpening(trimmed); open != "" {
			fence = open
			continue
		}
		switch t := strings.TrimRight(trimmed, " \t"); {
		case t == "":
		case strings.HasPrefix(t, "|"):
			s.rows = append(s.rows, t)
		case prev != "" && (strings.Trim(t, "=") == "" || strings.Trim(t, "-") == ""):
			s.headings[prev]++ // a setext underline
		default:
			if h := strings.TrimLeft(t, "#"); len(t)-len(h) >= 1 && len(t)-len(h) <= 6 && (h == "" || h[0] == ' ' || h[0] == '\t') {
				s.headings[strings.TrimSpace(h)]++
			} else {
				paragraph = t
			}
		}
	}
	s.openFence = fence
	return s
}

// fenceOpening returns the fence run (``` or ~~~, three or more) that
// opens a fenced code block on this line, or "".
func fenceOpening(line string) string {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 {
			if c == "`" && strings.Contains(line[n:], "`") {
				return "" // a backtick fence's info string holds no backtick
			}
			return line[:n]
		}
	}
	return ""
}
