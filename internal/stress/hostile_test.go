package stress

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// hostileCase is one hostile request with the precise answer the contract
// gives it. scheme, for a 401, is the scheme WWW-Authenticate must name.
// alt, for a raw dot-segment path the contract does not say whether to
// normalize, is the answer of the route a normalizing server lands on
// (status and code); either answer must change nothing.
type hostileCase struct {
	route, name string
	req         request
	status      int
	code        string
	scheme      string
	alt         *hostileCase
}

// TestHostileInput sends the classics to every route: invalid UTF-8, NUL,
// 10,000-deep nesting, duplicate and case-folded keys, numbers as strings,
// huge numbers, 10 MB bodies (sized and chunked), path traversal and
// non-UUID ids, credentials in any-case query names, repeated, mixed-case
// and malformed Authorization headers; then slow headers and slow bodies.
// Each must get its precise 4xx problem (status and code from the
// contract) and change nothing: a digest of every table is compared
// around each request. Every failure names the route and the case.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	f := newFixture(t, venueOpts{})
	cases := hostileCases(f)
	var notFoundBodies = map[string][]string{}
	for _, c := range cases {
		settleOutbox(t, f.v.db)
		unchanged(t, f.v.db, c.route+": "+c.name, func() {
			r := f.v.do(c.req)
			if c.alt != nil && r.Status == c.alt.status {
				c = *c.alt
			}
			if m := problemMismatch(r, c.status, c.code); m != "" {
				t.Errorf("%s: %s: %s", c.route, c.name, m)
				return
			}
			if c.status == http.StatusUnauthorized && !strings.Contains(r.Header.Get("WWW-Authenticate"), c.scheme) {
				t.Errorf("%s: %s: 401 with WWW-Authenticate %q, want the %s scheme", c.route, c.name, r.Header.Get("WWW-Authenticate"), c.scheme)
			}
			if c.route == "exchange" && c.status == http.StatusNotFound {
				notFoundBodies[string(r.Body)] = append(notFoundBodies[string(r.Body)], c.name)
			}
		})
	}
	if len(notFoundBodies) > 1 {
		t.Errorf("exchange's 404 bodies differ between cases (they must be byte-identical): %v", notFoundBodies)
	}
	t.Logf("%d hostile requests", len(cases))

	// Slow clients: the server's timeouts end them; nothing is stored.
	before := tableDigests(t, f.v.db)
	slowClients(t, f)
	if ch := changedTables(before, tableDigests(t, f.v.db)); len(ch) > 0 {
		t.Errorf("slow requests changed the database: %s", strings.Join(ch, ", "))
	}
	checkInvariants(t, f.v)
}

func hostileCases(f *fixture) []hostileCase {
	var cs []hostileCase
	mk := func(route, name string, req request, status int, code string) hostileCase {
		scheme := ""
		switch route {
		case "claim":
			scheme = "Consensus-Session"
		case "room", "events", "artifact":
			scheme = "Consensus-Participant"
		case "admin create", "admin list", "admin get", "admin revoke", "admin resend":
			scheme = "Bearer"
		}
		return hostileCase{route, name, req, status, code, scheme, nil}
	}
	add := func(route, name string, req request, status int, code string) {
		cs = append(cs, mk(route, name, req, status, code))
	}
	// dotted is a raw "/../" path: 404 as sent or, normalized, the answer
	// of the route it resolves to.
	dotted := func(route, name string, req request, altRoute string, altStatus int, altCode string) {
		c := mk(route, name, req, 404, "not-found")
		alt := mk(altRoute, name+" (normalized)", req, altStatus, altCode)
		c.alt = &alt
		cs = append(cs, c)
	}
	A, S, P, I, D := f.a, f.c.Inv.Secret, f.d.Inv.Proof, f.d.Inv.Inbox, f.a.Digest
	pa := participantAuth(A.Token)
	ses := "Consensus-Session " + f.d.Session
	op := "Bearer " + f.v.op
	bID, cInv, agID := f.b.PID, f.c.Inv.InvitationID, f.ag.AgreementID

	// Builders of each route's request with a given body / id / headers.
	exchange := func(body string) request { return f.exchangeReq(body) }
	claim := func(body string) request { return f.claimReq(body) }
	events := func(key, body string) request { return f.events(A, key, body) }
	create := func(body string) request { return f.createReq(body) }
	idURL := func(id, action string) string { return agentURL(f.base, id, action) }
	nested := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	tenMB := bytes.Repeat([]byte("a"), 10<<20)
	big := func(route string, req request) {
		sized := req
		sized.Body = append(append([]byte(`{"x":"`), tenMB...), `"}`...)
		add(route, "10 MB body", sized, 413, "payload-too-large")
		chunked := req
		chunked.Body, chunked.Chunked = sized.Body, true
		add(route, "10 MB body, chunked", chunked, 413, "payload-too-large")
	}

	// ---- exchange ----
	add("exchange", "invalid UTF-8", exchange(`{"secret":"`+S+"\xff\xfe"+`"}`), 400, "invalid-request")
	add("exchange", "raw NUL after the document", exchange(`{"secret":`+q(S)+"}\x00"), 400, "invalid-request")
	add("exchange", "raw NUL inside the string", exchange(`{"secret":"`+S+"\x00"+`"}`), 400, "invalid-request")
	add("exchange", `\u0000 in the secret (a wrong secret)`, exchange(`{"secret":"`+S+`\u0000"}`), 404, "not-found")
	add("exchange", "10,000-deep nesting (over 1,024 bytes)", exchange(`{"secret":`+nested+`}`), 413, "payload-too-large")
	add("exchange", "duplicate secret", exchange(`{"secret":"csi_x","secret":`+q(S)+`}`), 400, "invalid-request")
	add("exchange", "case-folded Secret", exchange(`{"Secret":`+q(S)+`}`), 400, "invalid-request")
	add("exchange", "number as the secret", exchange(`{"secret":12345}`), 400, "invalid-request")
	add("exchange", "huge number as the secret", exchange(`{"secret":1e99999}`), 400, "invalid-request")
	add("exchange", "array body", exchange(`[`+q(S)+`]`), 400, "invalid-request")
	add("exchange", "unknown member", exchange(`{"secret":`+q(S)+`,"admin":true}`), 400, "invalid-request")
	big("exchange", exchange(""))
	for _, id := range []string{"not-a-uuid", "00000000-0000-0000-0000-00000000000g", "%00", "..%2F..%2Fadmin%2Fagreements", strings.Repeat("a", 8000), "00000000-0000-4000-8000-000000000000"} {
		add("exchange", "id "+trunc(id), request{Method: "POST", URL: idURL(id, "exchange"), Body: exchangeBody(S)}, 404, "not-found")
	}
	dotted("exchange", "path traversal to admin, without the operator token", request{Method: "POST", URL: f.base + "/api/v1/agent/invitations/" + cInv + "/../../../admin/agreements",
		Header: hdr("Authorization", "Consensus-Invite "+S), Body: []byte(createJSON(`"T"`, `"o"`, onePart))}, "admin create", 401, "unauthorized")
	add("exchange", "Consensus-Invite twice", request{Method: "POST", URL: f.url(f.c, "exchange"), Header: hdr("Authorization", "Consensus-Invite "+S, "Authorization", "Consensus-Invite "+S)}, 400, "invalid-request")
	add("exchange", "authorization and AUTHORIZATION", request{Method: "POST", URL: f.url(f.c, "exchange"), Header: hdr("authorization", "Consensus-Invite "+S, "AUTHORIZATION", "Consensus-Invite csi_other")}, 400, "invalid-request")
	add("exchange", "Bearer scheme", request{Method: "POST", URL: f.url(f.c, "exchange"), Header: hdr("Authorization", "Bearer "+S)}, 400, "invalid-request")
	add("exchange", "header and body secrets differ", request{Method: "POST", URL: f.url(f.c, "exchange"), Header: hdr("Authorization", "Consensus-Invite csi_other"), Body: exchangeBody(S)}, 400, "invalid-request")

	// ---- claim ----
	add("claim", "invalid UTF-8", claim(`{"emailProof":"`+P+"\xff"+`","inbox":`+q(I)+`}`), 400, "invalid-request")
	add("claim", "raw NUL inside a string", claim(`{"emailProof":"`+P+"\x00"+`","inbox":`+q(I)+`}`), 400, "invalid-request")
	add("claim", `\u0000 in the proof (a wrong proof)`, claim(`{"emailProof":"`+P+`\u0000","inbox":`+q(I)+`}`), 403, "proof-mismatch")
	add("claim", `\u0000 in the inbox`, claim(`{"emailProof":`+q(P)+`,"inbox":"a\u0000b@agents.example"}`), 400, "invalid-request")
	add("claim", "10,000-deep nesting (over 4,096 bytes)", claim(`{"emailProof":`+nested+`,"inbox":`+q(I)+`}`), 413, "payload-too-large")
	add("claim", "duplicate inbox", claim(`{"emailProof":`+q(P)+`,"inbox":"x@agents.example","inbox":`+q(I)+`}`), 400, "invalid-request")
	add("claim", "case-folded EmailProof", claim(`{"EmailProof":`+q(P)+`,"inbox":`+q(I)+`}`), 400, "invalid-request")
	add("claim", "number as the proof", claim(`{"emailProof":12345,"inbox":`+q(I)+`}`), 400, "invalid-request")
	add("claim", "runtimeEndpoint as a number", claim(`{"emailProof":`+q(P)+`,"inbox":`+q(I)+`,"runtimeEndpoint":1e308}`), 400, "invalid-request")
	add("claim", "runtimeEndpoint with userinfo", claim(`{"emailProof":`+q(P)+`,"inbox":`+q(I)+`,"runtimeEndpoint":"https://u:p@example.com/"}`), 400, "invalid-request")
	big("claim", request{Method: "POST", URL: f.url(f.d, "claim"), Header: hdr("Authorization", ses)})
	for _, id := range []string{"not-a-uuid", "%00", "..%2F" + f.d.Inv.InvitationID} {
		add("claim", "id "+trunc(id), request{Method: "POST", URL: idURL(id, "claim"), Header: hdr("Authorization", ses), Body: claimBody(P, I)}, 401, "unauthorized")
	}
	add("claim", "Consensus-Session twice", request{Method: "POST", URL: f.url(f.d, "claim"), Header: hdr("Authorization", ses, "Authorization", ses), Body: claimBody(P, I)}, 400, "invalid-request")
	add("claim", "participant token instead of the session", request{Method: "POST", URL: f.url(f.d, "claim"), Header: hdr("Authorization", pa), Body: claimBody(P, I)}, 401, "unauthorized")
	add("claim", "two sessions in one header", request{Method: "POST", URL: f.url(f.d, "claim"), Header: hdr("Authorization", ses+", "+ses), Body: claimBody(P, I)}, 401, "unauthorized")

	// ---- room, artifact ----
	for _, action := range []string{"room", "artifact"} {
		u := f.url(A, action)
		for _, id := range []string{"not-a-uuid", "%00", "..%2F" + A.Inv.InvitationID, A.Inv.InvitationID + "%00"} {
			add(action, "id "+trunc(id), request{Method: "GET", URL: idURL(id, action), Header: hdr("Authorization", pa)}, 401, "unauthorized")
		}
		add(action, "Authorization twice (A, then B)", request{Method: "GET", URL: u, Header: hdr("Authorization", pa, "Authorization", participantAuth(f.b.Token))}, 400, "invalid-request")
		add(action, "authorization and Authorization", request{Method: "GET", URL: u, Header: hdr("authorization", pa, "Authorization", pa)}, 400, "invalid-request")
		add(action, "two tokens in one header", request{Method: "GET", URL: u, Header: hdr("Authorization", pa+", "+participantAuth(f.b.Token))}, 401, "unauthorized")
		add(action, "Bearer scheme", request{Method: "GET", URL: u, Header: hdr("Authorization", "Bearer "+A.Token)}, 401, "unauthorized")
		add(action, "session instead of the participant token", request{Method: "GET", URL: u, Header: hdr("Authorization", ses)}, 401, "unauthorized")
		add(action, "invalid UTF-8 in the token", request{Method: "GET", URL: u, Header: hdr("Authorization", "Consensus-Participant "+A.Token+"\xff")}, 401, "unauthorized")
		dotted(action, "traversal to B's route with A's token", request{Method: "GET", URL: f.base + "/api/v1/agent/invitations/" + A.Inv.InvitationID + "/../" + f.b.Inv.InvitationID + "/" + action,
			Header: hdr("Authorization", pa)}, action, 401, "unauthorized")
	}

	// ---- events ----
	add("events", "invalid UTF-8", events("hostile-01", `{"action":"comment","body":"`+"\xff\xfe"+`","revision":1,"digest":`+q(D)+`}`), 400, "invalid-request")
	add("events", "lone surrogate escaped", events("hostile-02", `{"action":"comment","body":"\udbff","revision":1,"digest":`+q(D)+`}`), 400, "invalid-request")
	add("events", "raw NUL inside the body string", events("hostile-03", `{"action":"comment","body":"a`+"\x00"+`b","revision":1,"digest":`+q(D)+`}`), 400, "invalid-request")
	add("events", `\u0000 in the body`, events("hostile-04", `{"action":"comment","body":"a\u0000b","revision":1,"digest":`+q(D)+`}`), 400, "invalid-request")
	add("events", "raw NUL after the document", events("hostile-05", string(eventBody("comment", "x", 1, D))+"\x00"), 400, "invalid-request")
	add("events", "10,000-deep nesting", events("hostile-06", `{"action":"comment","body":`+nested+`,"revision":1,"digest":`+q(D)+`}`), 400, "invalid-request")
	add("events", "duplicate action", events("hostile-07", `{"action":"comment","body":"","revision":1,"digest":`+q(D)+`,"action":"agree"}`), 400, "invalid-request")
	add("events", "case-folded Action", events("hostile-08", `{"Action":"agree","body":"","revision":1,"digest":`+q(D)+`}`), 400, "invalid-request")
	add("events", "revision as a string", events("hostile-09", `{"action":"agree","body":"","revision":"1","digest":`+q(D)+`}`), 400, "invalid-request")
	add("events", "revision 1e400", events("hostile-10", `{"action":"agree","body":"","revision":1e400,"digest":`+q(D)+`}`), 400, "invalid-request")
	add("events", "revision 2^70", events("hostile-11", `{"action":"agree","body":"","revision":1180591620717411303424,"digest":`+q(D)+`}`), 400, "invalid-request")
	add("events", "revision 1.5", events("hostile-12", `{"action":"agree","body":"","revision":1.5,"digest":`+q(D)+`}`), 400, "invalid-request")
	add("events", "digest as a number", events("hostile-13", `{"action":"agree","body":"","revision":1,"digest":1}`), 400, "invalid-request")
	add("events", "digest in upper case", events("hostile-14", string(eventBody("agree", "", 1, strings.ToUpper(D)))), 400, "invalid-request")
	add("events", "revision 2 (stale or wrong)", events("hostile-15", string(eventBody("agree", "", 2, D))), 409, "revision-mismatch")
	add("events", "body null", events("hostile-16", `{"action":"comment","body":null,"revision":1,"digest":`+q(D)+`}`), 400, "invalid-request")
	add("events", "unknown member", events("hostile-17", `{"action":"agree","body":"","revision":1,"digest":`+q(D)+`,"signature":"x"}`), 400, "invalid-request")
	big("events", request{Method: "POST", URL: f.url(A, "events"), Header: hdr("Authorization", pa, "Idempotency-Key", "hostile-big")})
	for _, key := range []string{"short", strings.Repeat("k", 129), "key with spaces", "key/../etc", "key\xff\xfe-utf8", "ключ-не-ascii"} {
		add("events", "Idempotency-Key "+trunc(key), events(key, string(eventBody("agree", "", 1, D))), 400, "invalid-request")
	}
	add("events", "Idempotency-Key twice", request{Method: "POST", URL: f.url(A, "events"), Header: hdr("Authorization", pa, "Idempotency-Key", "hostile-k1", "Idempotency-Key", "hostile-k2"), Body: eventBody("agree", "", 1, D)}, 400, "invalid-request")
	add("events", "idempotency-key and Idempotency-Key", request{Method: "POST", URL: f.url(A, "events"), Header: hdr("Authorization", pa, "idempotency-key", "hostile-k3", "Idempotency-Key", "hostile-k4"), Body: eventBody("agree", "", 1, D)}, 400, "invalid-request")
	add("events", "Authorization twice", request{Method: "POST", URL: f.url(A, "events"), Header: hdr("Authorization", pa, "AUTHORIZATION", participantAuth(f.b.Token), "Idempotency-Key", "hostile-k5"), Body: eventBody("agree", "", 1, D)}, 400, "invalid-request")
	for _, id := range []string{"not-a-uuid", "%00", f.b.Inv.InvitationID} {
		add("events", "id "+trunc(id)+" with A's token", request{Method: "POST", URL: idURL(id, "events"), Header: hdr("Authorization", pa, "Idempotency-Key", "hostile-id"), Body: eventBody("agree", "", 1, D)}, 401, "unauthorized")
	}

	// ---- operator: create ----
	part := `"kind":"agent","email":"solo@agents.example","required":true`
	add("admin create", "invalid UTF-8 in the title", create(createJSON(`"T`+"\xff"+`"`, `"o"`, onePart)), 400, "invalid-request")
	add("admin create", `\u0000 in the title`, create(createJSON(`"a\u0000b"`, `"o"`, onePart)), 400, "invalid-request")
	add("admin create", "raw NUL after the document", create(createJSON(`"T"`, `"o"`, onePart)+"\x00"), 400, "invalid-request")
	add("admin create", "10,000-deep nesting", create(createJSON(`"T"`, `"o"`, `[`+nested+`]`)), 400, "invalid-request")
	add("admin create", "duplicate title", create(`{"title":"A","title":"B","objective":"o","rules":[],"deadline":"2099-01-01T00:00:00Z","participants":`+onePart+`}`), 400, "invalid-request")
	add("admin create", "duplicate email in participants[0]", create(createJSON(`"T"`, `"o"`, `[{"displayName":"A","email":"x@agents.example",`+part+`}]`)), 400, "invalid-request")
	add("admin create", "case-folded OBJECTIVE", create(`{"title":"T","OBJECTIVE":"o","rules":[],"deadline":"2099-01-01T00:00:00Z","participants":`+onePart+`}`), 400, "invalid-request")
	add("admin create", "required as a string", create(createJSON(`"T"`, `"o"`, `[{"displayName":"A","kind":"agent","email":"solo@agents.example","required":"true"}]`)), 400, "invalid-request")
	add("admin create", "required as a huge number", create(createJSON(`"T"`, `"o"`, `[{"displayName":"A","kind":"agent","email":"solo@agents.example","required":1e999}]`)), 400, "invalid-request")
	add("admin create", "deadline as a number", create(`{"title":"T","objective":"o","rules":[],"deadline":4102444800,"participants":`+onePart+`}`), 400, "invalid-request")
	add("admin create", "title as a number", create(createJSON(`1`, `"o"`, onePart)), 400, "invalid-request")
	add("admin create", "deadline with fractional seconds", create(`{"title":"T","objective":"o","rules":[],"deadline":"2099-01-01T00:00:00.5Z","participants":`+onePart+`}`), 400, "invalid-request")
	big("admin create", request{Method: "POST", URL: f.adminURL("/agreements"), Header: hdr("Authorization", op)})
	add("admin create", "Bearer twice", request{Method: "POST", URL: f.adminURL("/agreements"), Header: hdr("Authorization", op, "Authorization", op), Body: []byte(createJSON(`"T"`, `"o"`, onePart))}, 400, "invalid-request")
	add("admin create", "wrong Bearer", request{Method: "POST", URL: f.adminURL("/agreements"), Header: hdr("Authorization", "Bearer "+f.v.op+"x"), Body: []byte(createJSON(`"T"`, `"o"`, onePart))}, 401, "unauthorized")
	add("admin create", "participant token as Bearer", request{Method: "POST", URL: f.adminURL("/agreements"), Header: hdr("Authorization", "Bearer "+A.Token), Body: []byte(createJSON(`"T"`, `"o"`, onePart))}, 401, "unauthorized")

	// ---- operator: list, get ----
	for _, qs := range []string{"?limit=%2210%22", "?limit=1e3", "?limit=99999999999999999999", "?limit=0", "?limit=-1", "?cursor=%FF%FE", "?cursor=..%2F..%2F"} {
		add("admin list", qs, request{Method: "GET", URL: f.adminURL("/agreements") + qs, Header: hdr("Authorization", op)}, 400, "invalid-request")
	}
	add("admin list", "Bearer twice", request{Method: "GET", URL: f.adminURL("/agreements"), Header: hdr("Authorization", op, "Authorization", "Bearer x")}, 400, "invalid-request")
	add("admin list", "no credential", request{Method: "GET", URL: f.adminURL("/agreements")}, 401, "unauthorized")
	for _, id := range []string{"not-a-uuid", "%00", "..%2F..%2Fparticipants", strings.ToUpper(agID) + "x", agID + "%00"} {
		add("admin get", "id "+trunc(id), request{Method: "GET", URL: f.adminURL("/agreements/" + id), Header: hdr("Authorization", op)}, 404, "not-found")
	}
	dotted("admin get", "traversal to revoke (GET)", request{Method: "GET", URL: f.adminURL("/agreements/" + agID + "/../../participants/" + bID + "/revoke"),
		Header: hdr("Authorization", op)}, "admin revoke", 405, "method-not-allowed")
	add("admin get", "Bearer twice", request{Method: "GET", URL: f.adminURL("/agreements/" + agID), Header: hdr("Authorization", op, "authorization", op)}, 400, "invalid-request")

	// ---- operator: revoke, resend ----
	for _, id := range []string{"not-a-uuid", "%00", "..%2F" + bID} {
		add("admin revoke", "id "+trunc(id), request{Method: "POST", URL: f.adminURL("/participants/" + id + "/revoke"), Header: hdr("Authorization", op)}, 404, "not-found")
		add("admin resend", "id "+trunc(id), request{Method: "POST", URL: f.adminURL("/invitations/" + id + "/resend"), Header: hdr("Authorization", op)}, 404, "not-found")
	}
	big("admin revoke", request{Method: "POST", URL: f.adminURL("/participants/" + bID + "/revoke"), Header: hdr("Authorization", op)})
	big("admin resend", request{Method: "POST", URL: f.adminURL("/invitations/" + cInv + "/resend"), Header: hdr("Authorization", op)})
	add("admin revoke", "Bearer twice", request{Method: "POST", URL: f.adminURL("/participants/" + bID + "/revoke"), Header: hdr("Authorization", op, "Authorization", op)}, 400, "invalid-request")
	add("admin resend", "Bearer twice", request{Method: "POST", URL: f.adminURL("/invitations/" + cInv + "/resend"), Header: hdr("Authorization", op, "AUTHORIZATION", op)}, 400, "invalid-request")
	add("admin revoke", "participant token as Bearer", request{Method: "POST", URL: f.adminURL("/participants/" + bID + "/revoke"), Header: hdr("Authorization", "Bearer "+f.b.Token)}, 401, "unauthorized")
	add("admin resend", "no credential", request{Method: "POST", URL: f.adminURL("/invitations/" + cInv + "/resend")}, 401, "unauthorized")

	// ---- discovery ----
	// Encoded slashes are never dot-segments: these stay 404 however paths are normalized.
	for _, p := range []string{"/schemas/..%2F..%2Fopenapi.json/v1", "/schemas/AGREEMENT/v1", "/schemas/%00/v1",
		"/problems/..%2F..%2Fetc%2Fpasswd", "/problems/no-such-problem", "/invite/not-a-uuid", "/invite/..%2F..%2Fapi%2Fhealth", "/invite/%00", "/.well-known/..%2Fopenapi.json"} {
		add("discovery", p, request{Method: "GET", URL: f.base + p}, 404, "not-found")
	}

	// ---- credentials in the query string, any case, every route ----
	routes := []struct {
		name string
		req  request
	}{
		{"exchange", exchange(string(exchangeBody(S)))},
		{"claim", claim(string(claimBody(P, I)))},
		{"room", request{Method: "GET", URL: f.url(A, "room"), Header: hdr("Authorization", pa)}},
		{"events", events("query-hostile", string(eventBody("comment", "q", 1, D)))},
		{"artifact", request{Method: "GET", URL: f.url(A, "artifact"), Header: hdr("Authorization", pa)}},
		{"admin create", create(createJSON(`"T"`, `"o"`, onePart))},
		{"admin list", request{Method: "GET", URL: f.adminURL("/agreements"), Header: hdr("Authorization", op)}},
		{"admin get", request{Method: "GET", URL: f.adminURL("/agreements/" + agID), Header: hdr("Authorization", op)}},
		{"admin revoke", request{Method: "POST", URL: f.adminURL("/participants/" + bID + "/revoke"), Header: hdr("Authorization", op)}},
		{"admin resend", request{Method: "POST", URL: f.adminURL("/invitations/" + cInv + "/resend"), Header: hdr("Authorization", op)}},
		{"discovery", request{Method: "GET", URL: f.base + "/.well-known/consensus-agent"}},
		{"discovery", request{Method: "GET", URL: f.base + "/api/health"}},
		{"discovery", request{Method: "GET", URL: f.base + "/invite/" + cInv}},
	}
	names := []string{"secret", "Secret", "TOKEN", "sessionToken", "SessionToken", "participanttoken", "emailProof", "EMAILPROOF"}
	for i, r := range routes {
		for j := 0; j < 2; j++ {
			n := names[(2*i+j)%len(names)]
			req := r.req
			sep := "?"
			if strings.Contains(req.URL, "?") {
				sep = "&"
			}
			req.URL += sep + "limit=10&" + n + "=" + S
			add(r.name, "credential in the query as "+n, req, 400, "credential-in-query")
		}
	}
	return cs
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:20] + "…(" + strconv.Itoa(len(s)) + " bytes)"
	}
	return s
}
