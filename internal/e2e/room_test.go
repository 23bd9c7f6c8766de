package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/venue"
)

func TestRoom(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := s.create("Room", s.future(), participantSpec{"Alpha", "agent", true}, participantSpec{"Beta", "agent", true}, participantSpec{"Watcher", "agent", false})
	a := s.agent(c.Participants[0].InvitationID).join()
	b := s.agent(c.Participants[1].InvitationID).join()

	r := a.room()
	expect(t, r, 200, "")
	m := r.json(t)
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Error("room is not no-store")
	}
	for _, k := range []string{"revision", "roster", "events", "you", "outcome", "chainHead", "deadline", "serverTime", "artifact"} {
		if _, ok := m[k]; !ok {
			t.Errorf("room lacks %s", k)
		}
	}
	roster := m["roster"].([]any)
	if len(roster) != 3 || roster[0].(map[string]any)["state"] != "claimed" || roster[2].(map[string]any)["state"] != "invited" {
		t.Fatalf("roster %v", roster)
	}
	if m["outcome"].(map[string]any)["status"] != "pending" || m["chainHead"] != strings.Repeat("0", 64) || m["artifact"] != nil {
		t.Fatalf("initial room %s", r.body)
	}
	if m["you"].(map[string]any)["eventsRemaining"] != float64(100) {
		t.Fatalf("you %v", m["you"])
	}

	t.Run("ETag and 304", func(t *testing.T) {
		etag := r.Header.Get("ETag")
		if !strings.HasPrefix(etag, `"`) {
			t.Fatalf("ETag %q is not strong", etag)
		}
		h := a.auth()
		h["If-None-Match"] = etag
		r304 := s.do("GET", s.agentPath(a.inv.InvitationID, "room"), h, nil)
		expect(t, r304, 304, "")
		if len(r304.body) != 0 || r304.Header.Get("ETag") != etag {
			t.Fatal("304 with a body or another ETag")
		}
		expect(t, b.post("beta-comment-1", "comment", "hello"), 201, "")
		expect(t, s.do("GET", s.agentPath(a.inv.InvitationID, "room"), h, nil), 200, "")
	})
	t.Run("the body is RoomView's encoding, events last", func(t *testing.T) {
		expect(t, b.post("beta-comment-0", "comment", "a <b> & \"quoted\" comment é"), 201, "")
		r := a.room()
		expect(t, r, 200, "")
		dec := json.NewDecoder(bytes.NewReader(r.body))
		dec.DisallowUnknownFields()
		var v venue.RoomView
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		var again bytes.Buffer
		enc := json.NewEncoder(&again)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if got := bytes.TrimSuffix(again.Bytes(), []byte("\n")); !bytes.Equal(got, r.body) {
			t.Fatalf("the room's body is not RoomView's encoding:\nbody    %s\nencoded %s", r.body, got)
		}
		if !bytes.HasSuffix(r.body, []byte(`]}`)) || bytes.LastIndex(r.body, []byte(`"events":[`)) < bytes.LastIndex(r.body, []byte(`"serverTime":`)) {
			t.Fatalf("events are not the room's last member: %s", r.body)
		}
	})
	t.Run("a GET never joins or decides", func(t *testing.T) {
		m := a.room().json(t)
		if m["roster"].([]any)[2].(map[string]any)["state"] != "invited" || m["you"].(map[string]any)["decision"] != nil {
			t.Fatal("room GET changed state")
		}
	})
	t.Run("credentials are not interchangeable", func(t *testing.T) {
		for name, h := range map[string]string{
			"none":               "",
			"session token":      "Consensus-Session " + a.session,
			"session in scheme":  "Consensus-Participant " + a.session,
			"invite secret":      "Consensus-Participant " + a.inv.Secret,
			"another invitation": "Consensus-Participant " + b.token,
			"bearer":             "Bearer " + a.token,
			"operator":           "Bearer " + operatorToken,
		} {
			r := s.do("GET", s.agentPath(a.inv.InvitationID, "room"), map[string]string{"Authorization": h}, nil)
			expect(t, r, 401, "unauthorized")
			if r.Header.Get("WWW-Authenticate") != "Consensus-Participant" {
				t.Errorf("%s: WWW-Authenticate %q", name, r.Header.Get("WWW-Authenticate"))
			}
		}
	})
	t.Run("revocation is immediate", func(t *testing.T) {
		expect(t, s.do("POST", "/api/v1/admin/participants/"+b.pid+"/revoke", operator(), nil), 200, "")
		expect(t, b.room(), 401, "unauthorized")
		expect(t, b.exchange(), 404, "not-found")
		expect(t, b.post("beta-comment-2", "comment", "still here?"), 401, "unauthorized")
	})
}

func TestRoomPersistsExpiry(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	deadline := s.Clock.Now().Add(time.Hour).Truncate(time.Second)
	c := s.create("Expiry", deadline)
	a := s.agent(c.Participants[0].InvitationID).join()
	expect(t, a.post("agree-before-deadline", "agree", ""), 201, "")
	// Read once before the deadline, so the version's shared bytes are
	// made for the pending outcome; the read after it must not reuse them.
	if o := a.room().json(t)["outcome"].(map[string]any); o["status"] != "pending" {
		t.Fatalf("outcome before the deadline %v", o)
	}
	s.Clock.Advance(time.Hour)
	o := a.room().json(t)["outcome"].(map[string]any)
	if o["status"] != "expired" || o["decidedAt"] != deadline.UTC().Format("2006-01-02T15:04:05.000000Z") || o["decidingEventId"] != nil {
		t.Fatalf("outcome %v", o)
	}
	expect(t, a.post("comment-after-deadline", "comment", "late"), 409, "room-closed")
	// the participant token keeps working for reading
	expect(t, a.room(), 200, "")
	expect(t, a.artifact("GET"), 404, "artifact-not-ready")
	// the operator sees it too
	d := s.do("GET", "/api/v1/admin/agreements/"+c.AgreementID, operator(), nil).json(t)
	if d["outcome"].(map[string]any)["status"] != "expired" {
		t.Fatalf("operator view %v", d["outcome"])
	}
}

func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.do("GET", "/api/v1/agent/invitations/6f1d8a9e-2b3c-4d5e-8f90-123456789abc/exchange", nil, nil)
	expect(t, r, http.StatusMethodNotAllowed, "method-not-allowed")
	if r.Header.Get("Allow") == "" || !strings.Contains(r.Header.Get("Allow"), "POST") {
		t.Fatalf("Allow %q", r.Header.Get("Allow"))
	}
	r = s.do("DELETE", "/api/v1/agent/invitations/6f1d8a9e-2b3c-4d5e-8f90-123456789abc/room", nil, nil)
	expect(t, r, http.StatusMethodNotAllowed, "method-not-allowed")
	if !strings.Contains(r.Header.Get("Allow"), "GET") {
		t.Fatalf("Allow %q", r.Header.Get("Allow"))
	}
}

func TestCredentialInQueryRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, name := range []string{"secret", "token", "sessionToken", "participantToken", "emailProof"} {
		leak := "csi_query-leak-" + name
		r := s.do("POST", s.agentPath("6f1d8a9e-2b3c-4d5e-8f90-123456789abc", "exchange")+"?"+name+"="+leak, nil, nil)
		expect(t, r, 400, "credential-in-query")
		if strings.Contains(s.Logs.String(), leak) || strings.Contains(string(r.body), leak) {
			t.Fatalf("%s value echoed or logged", name)
		}
	}
	expect(t, s.do("GET", "/api/health?token=abc", nil, nil), 400, "credential-in-query")
}
