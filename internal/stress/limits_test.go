package stress

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/consensus-md/consensus/internal/mailsink"
)

// escapeAll writes s as a JSON string with every character as a \uXXXX
// escape (a surrogate pair above U+FFFF): the longest legal encoding, as
// Python's json.dumps gives for non-ASCII by default.
func escapeAll(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r > 0xFFFF {
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	b.WriteByte('"')
	return b.String()
}

// TestDefect7LongestLegalCommentIsAccepted: a legal comment of
// 4,000 characters is accepted however it is encoded; here every character
// is a \u00e9 escape (24 KB) or a surrogate-pair escape of an emoji
// (48 KB). Today both are 413: the limit counts bytes of one encoding.
func TestDefect7LongestLegalCommentIsAccepted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, venueOpts{})
	for i, text := range []string{strings.Repeat("é", 4000), strings.Repeat("😀", 4000)} {
		body := `{"action":"comment","body":` + escapeAll(text) + `,"revision":1,"digest":` + q(f.a.Digest) + `}`
		r := f.v.do(f.events(f.a, fmt.Sprintf("longest-legal-%d", i), body))
		if r.Status != http.StatusCreated {
			t.Errorf("a %d-byte body holding a legal 4,000-character comment: %s, want 201", len(body), r)
			continue
		}
		var got struct{ Event struct{ Body string } }
		if err := json.Unmarshal(r.Body, &got); err != nil || got.Event.Body != text {
			t.Errorf("the stored comment is not the 4,000 characters sent (%d characters back)", len([]rune(got.Event.Body)))
		}
	}
	checkInvariants(t, f.v)
}

// TestDefect7LongestLegalCreateIsAccepted (size limits must admit
// the longest legal encoding of every legal body): an agreement with every
// field at its maximum (200-character title, 4,000-character objective, 50
// rules of 1,000 characters, 50 participants with 200-character names and
// long addresses), every member name and string written in \uXXXX escapes
// (emoji as surrogate pairs), is a legal create. Today it is 413: operator
// bodies are limited to 256 KiB.
func TestDefect7LongestLegalCreateIsAccepted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, venueOpts{})
	name := func(s string) string { return escapeAll(s) }
	title := strings.Repeat("😀", 200)
	var rules []string
	for i := 0; i < 50; i++ {
		rules = append(rules, escapeAll(strings.Repeat("😀", 1000)))
	}
	var parts []string
	for i := 0; i < 50; i++ {
		local := fmt.Sprintf("p%02d", i) + strings.Repeat("x", 61)
		domain := strings.Join([]string{strings.Repeat("d", 60), strings.Repeat("e", 60), strings.Repeat("f", 60), strings.Repeat("g", 60)}, ".") + ".example"
		parts = append(parts, "{"+name("displayName")+":"+escapeAll(strings.Repeat("😀", 200))+","+name("kind")+":"+escapeAll("agent")+","+
			name("email")+":"+escapeAll(local+"@"+domain)+","+name("required")+":true}")
	}
	body := "{" + name("title") + ":" + escapeAll(title) + "," + name("objective") + ":" + escapeAll(strings.Repeat("😀", 4000)) + "," +
		name("rules") + ":[" + strings.Join(rules, ",") + "]," + name("deadline") + ":" + escapeAll("2099-01-01T00:00:00Z") + "," +
		name("participants") + ":[" + strings.Join(parts, ",") + "]}"
	r := f.v.do(f.createReq(body))
	if r.Status != http.StatusCreated {
		t.Fatalf("a %d-byte create body with every field at its legal maximum: %s, want 201", len(body), r)
	}
	var c created
	if err := json.Unmarshal(r.Body, &c); err != nil || len(c.Participants) != 50 {
		t.Fatalf("create answered %s", r)
	}
	g := f.v.get(f.adminURL("/agreements/"+c.AgreementID), f.v.opHeader())
	wantStatus(t, "admin get", g, 200)
	if got, _ := g.JSON(t)["title"].(string); got != title {
		t.Errorf("the stored title is not the 200 characters sent")
	}
}

// expectRefusedOrDelivered creates an agreement for an address the
// transport may not deliver: the answer must be a 400 at creation (nothing
// stored), or a 201 and a delivered email. Anything else, such as an
// accepted agreement whose email then fails in the outbox, is the defect.
func expectRefusedOrDelivered(t *testing.T, v *venue, address string) {
	t.Helper()
	body := agreementBody("Address "+address, "o", nil, spec{Name: "Non-ASCII", Required: true, Email: address})
	before := tableDigests(t, v.db)
	r := v.post(v.url(0)+"/api/v1/admin/agreements", v.opHeader(), body)
	if r.Status == http.StatusBadRequest {
		wantProblem(t, "create for "+address, r, 400, "invalid-request")
		if ch := changedTables(before, tableDigests(t, v.db)); len(ch) > 0 {
			t.Errorf("the refused create for %s changed the database: %s", address, strings.Join(ch, ", "))
		}
		return
	}
	if r.Status != http.StatusCreated {
		t.Errorf("create for %s: %s, want 400 (undeliverable) or 201 and a delivered email", address, r)
		return
	}
	var c created
	_ = json.Unmarshal(r.Body, &c)
	var state, reply string
	eventually(20*time.Second, func() bool {
		err := v.db.QueryRow(context.Background(), `SELECT state, coalesce(last_reply, '') FROM outbox WHERE agreement_id = $1`, c.AgreementID).Scan(&state, &reply)
		return err == nil && (state == "sent" || state == "failed")
	})
	if state != "sent" {
		t.Errorf("the agreement for %s was accepted (201) but its invitation was not delivered: outbox state %q (%s); an address the transport cannot deliver is a 400 at creation", address, state, reply)
	}
}

// TestDefect8UndeliverableAddressIsRefused: an address the
// configured transport cannot deliver (a non-ASCII mailbox without
// SMTPUTF8) is a 400 at creation; a transport that can deliver it must
// deliver it. Today the agreement is created and the email fails later in
// the outbox, with the Maildir and with an SMTP relay that does not offer
// SMTPUTF8 alike.
func TestDefect8UndeliverableAddressIsRefused(t *testing.T) {
	t.Parallel()
	addresses := []string{"josé@agents.example", "agent@bücher.example"}
	t.Run("maildir", func(t *testing.T) {
		t.Parallel()
		v := newVenue(t, venueOpts{})
		for _, a := range addresses {
			expectRefusedOrDelivered(t, v, a)
		}
	})
	t.Run("smtp without SMTPUTF8", func(t *testing.T) {
		t.Parallel()
		sink, err := mailsink.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sink.Close() })
		v := newVenue(t, venueOpts{mailURL: sink.SMTPURL()})
		for _, a := range addresses {
			expectRefusedOrDelivered(t, v, a)
		}
	})
}

// TestDefect9CredentialQueryNamesAnyCase: a
// credential name in the query string is refused whatever its case, on
// every route, before anything is done. Today only the exact spellings are
// refused: ?Secret= exchanges, ?Token= reads the room.
func TestDefect9CredentialQueryNamesAnyCase(t *testing.T) {
	t.Parallel()
	f := newFixture(t, venueOpts{})
	names := []string{"Secret", "SECRET", "Token", "TOKEN", "sessiontoken", "SESSIONTOKEN", "SessionToken", "participanttoken", "ParticipantToken", "EMAILPROOF", "emailproof", "EmailProof"}
	var cases []refusal
	for i, n := range names {
		qs := "?" + n + "=x"
		room := request{Method: "GET", URL: f.url(f.a, "room") + qs, Header: hdr("Authorization", participantAuth(f.a.Token))}
		cases = append(cases, refusal{"room " + qs, room, 400, "credential-in-query"})
		switch i % 4 {
		case 0:
			r := f.exchangeReq(string(exchangeBody(f.c.Inv.Secret)))
			r.URL += qs
			cases = append(cases, refusal{"exchange " + qs, r, 400, "credential-in-query"})
		case 1:
			r := f.events(f.a, fmt.Sprintf("query-case-%d", i), string(eventBody("comment", "hello", 1, f.a.Digest)))
			r.URL += qs
			cases = append(cases, refusal{"events " + qs, r, 400, "credential-in-query"})
		case 2:
			r := f.createReq(createJSON(`"T"`, `"o"`, onePart))
			r.URL += qs
			cases = append(cases, refusal{"admin create " + qs, r, 400, "credential-in-query"})
		case 3:
			cases = append(cases, refusal{"openapi.json " + qs, request{Method: "GET", URL: f.base + "/openapi.json" + qs}, 400, "credential-in-query"})
		}
	}
	cases = append(cases, refusal{"room ?token= (the exact name, refused today)", request{Method: "GET", URL: f.url(f.a, "room") + "?token=x", Header: hdr("Authorization", participantAuth(f.a.Token))}, 400, "credential-in-query"})
	expectRefused(t, f.v, cases)
}

// TestDefect9ContentTypeOfJSONBodies: the JSON routes (exchange, claim,
// events, operator create) take a body only as application/json (an
// optional charset parameter must say UTF-8); a body with no Content-Type
// or another media type is 415 unsupported-media-type and changes nothing.
// Today a body without Content-Type is accepted as JSON, and so is a
// charset=iso-8859-1 one.
func TestDefect9ContentTypeOfJSONBodies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, venueOpts{})
	withCT := func(r request, ct string) request {
		if ct == "" {
			r.NoContentType = true
		} else {
			r.Header = r.Header.Clone()
			if r.Header == nil {
				r.Header = http.Header{}
			}
			r.Header.Set("Content-Type", ct)
		}
		return r
	}
	exchange := f.exchangeReq(string(exchangeBody(f.c.Inv.Secret)))
	var cases []refusal
	for _, ct := range []string{"", "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=iso-8859-1", "application/octet-stream"} {
		name := ct
		if name == "" {
			name = "no Content-Type"
		}
		cases = append(cases, refusal{"exchange, " + name, withCT(exchange, ct), 415, "unsupported-media-type"})
	}
	cases = append(cases,
		refusal{"claim, no Content-Type", withCT(f.claimReq(string(claimBody(f.d.Inv.Proof, f.d.Inv.Inbox))), ""), 415, "unsupported-media-type"},
		refusal{"events, no Content-Type", withCT(f.events(f.a, "no-content-type", string(eventBody("comment", "hi", 1, f.a.Digest))), ""), 415, "unsupported-media-type"},
		refusal{"events, text/plain", withCT(f.events(f.a, "text-plain-ct", string(eventBody("comment", "hi", 1, f.a.Digest))), "text/plain"), 415, "unsupported-media-type"},
		refusal{"admin create, no Content-Type", withCT(f.createReq(createJSON(`"T"`, `"o"`, onePart)), ""), 415, "unsupported-media-type"},
	)
	expectRefused(t, f.v, cases)

	// What a careful client sends is accepted.
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/json;charset=UTF-8", "Application/JSON"} {
		r := f.v.do(withCT(exchange, ct))
		if r.Status != http.StatusOK {
			t.Errorf("exchange with Content-Type %q: %s, want 200", ct, r)
		}
	}
	r := f.v.do(request{Method: "POST", URL: f.url(f.c, "exchange"), Header: hdr("Authorization", "Consensus-Invite "+f.c.Inv.Secret)})
	if r.Status != http.StatusOK {
		t.Errorf("exchange with the credential in the header and no body (no Content-Type needed): %s, want 200", r)
	}
	r = f.v.do(withCT(f.events(f.a, "json-utf8-ct", string(eventBody("comment", "hi", 1, f.a.Digest))), "application/json; charset=utf-8"))
	if r.Status != http.StatusCreated {
		t.Errorf("events with application/json; charset=utf-8: %s, want 201", r)
	}
}

// TestDefect9ResendAfterClaim states what resend does: it issues a fresh
// secret and email proof (the previous email stops working) and does not
// revoke a claimed participant token — revoke is the operator's tool for
// that — and the contract says so. Behaviour today matches; the failure is
// that openapi.json does not state what resend leaves working.
func TestDefect9ResendAfterClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t, venueOpts{})
	a := f.a
	old := a.Inv
	wantStatus(t, "resend after the claim", f.v.resend(f.base, old.InvitationID), http.StatusAccepted)
	fresh := f.v.mail.wait(t, old.InvitationID, func(inv invite) bool { return inv.Secret != old.Secret })
	if fresh.Proof == old.Proof {
		t.Errorf("the resent email carries the old proof")
	}
	// The claimed token keeps working.
	wantStatus(t, "room with the claimed token after the resend", f.v.room(f.base, a), http.StatusOK)
	wantStatus(t, "comment with the claimed token after the resend", f.v.postEvent(f.base, a, "after-resend-1", "comment", "still here"), http.StatusCreated)
	// The old email stops working; the new one works.
	wantProblem(t, "exchange with the old secret", f.v.post(f.url(a, "exchange"), nil, exchangeBody(old.Secret)), 404, "not-found")
	m := &member{Inv: fresh}
	f.v.exchange(t, f.base, m)
	wantProblem(t, "claim with the old proof", f.v.post(f.url(a, "claim"), hdr("Authorization", "Consensus-Session "+m.Session), claimBody(old.Proof, old.Inbox)), 403, "proof-mismatch")
	f.v.claim(t, f.base, m)
	if m.Token != a.Token || m.Binding != a.Binding {
		t.Errorf("a claim with the new proof and the same inbox did not replay the binding and token")
	}
	// The contract states it.
	doc := f.v.get(f.base+"/openapi.json", nil)
	wantStatus(t, "openapi.json", doc, 200)
	var api struct {
		Paths map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(doc.Body, &api); err != nil {
		t.Fatal(err)
	}
	var op struct{ Summary, Description string }
	_ = json.Unmarshal(api.Paths["/api/v1/admin/invitations/{invitationId}/resend"]["post"], &op)
	text := strings.ToLower(op.Summary + " " + op.Description)
	if !strings.Contains(text, "participant token") || !strings.Contains(text, "revoke") {
		t.Errorf("openapi.json's resend operation does not state that a claimed participant token keeps working (revoke stops it): %q", op.Description)
	}
	checkInvariants(t, f.v)
}
