package logmonitor

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/logmonitor/logtest"
)

// roomBody is a room as a participant reads it, with the members the
// monitor reads: its head changed age before serverTime.
func roomBody(t *testing.T, agreementID string, seq int64, chainHead string, age time.Duration) []byte {
	t.Helper()
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	const layout = "2006-01-02T15:04:05.000000Z"
	events := []map[string]any{}
	for s := int64(1); s <= seq; s++ {
		events = append(events, map[string]any{"seq": s, "createdAt": now.Add(-age).Format(layout), "action": "comment"})
	}
	b, err := json.Marshal(map[string]any{"agreementId": agreementID, "invitationId": "inv", "chainHead": chainHead,
		"serverTime": now.Format(layout), "events": events, "outcome": map[string]any{"status": "pending"}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMonitorChecksRoomsAgainstTheLog(t *testing.T) {
	t.Parallel()
	l := logtest.New(t, logtest.NewSigner(t))
	l.Append(
		logtest.HeadLeaf("same", 3, logtest.ChainHead("same-3")),
		logtest.HeadLeaf("newer", 3, logtest.ChainHead("newer-3")),
		logtest.HeadLeaf("late", 3, logtest.ChainHead("late-3")),
		logtest.HeadLeaf("forked", 3, logtest.ChainHead("forked-3")),
		logtest.HeadLeaf("shrunk", 3, logtest.ChainHead("shrunk-3")),
	)
	rooms := map[string][]byte{
		"same":   roomBody(t, "same", 3, logtest.ChainHead("same-3"), time.Minute),
		"newer":  roomBody(t, "newer", 4, logtest.ChainHead("newer-4"), 2*time.Second),
		"late":   roomBody(t, "late", 4, logtest.ChainHead("late-4"), time.Minute),
		"forked": roomBody(t, "forked", 3, logtest.ChainHead("other"), time.Minute),
		"shrunk": roomBody(t, "shrunk", 2, logtest.ChainHead("shrunk-2"), time.Minute),
		"empty":  roomBody(t, "empty", 0, strings.Repeat("0", 64), 0),
		"unseen": roomBody(t, "unseen", 1, logtest.ChainHead("unseen-1"), time.Hour),
	}
	cfg := config(l, statePath(t))
	for id, body := range rooms {
		path := "/api/v1/agent/invitations/" + id + "/room"
		l.SetRoom(path, "csp_"+id, body)
		cfg.Rooms = append(cfg.Rooms, Room{URL: l.URL() + path, Token: "csp_" + id})
	}
	cfg.Rooms = append(cfg.Rooms, Room{URL: l.URL() + "/api/v1/agent/invitations/same/room", Token: "csp_wrong"})
	rep := mustRun(t, cfg)
	want := map[string]Status{"room same": OK, "room newer": Pending, "room late": Fail, "room forked": Fail,
		"room shrunk": Fail, "room empty": OK, "room unseen": Fail}
	got := map[string]Status{}
	for _, c := range rep.Checks {
		if strings.HasPrefix(c.Name, "room ") {
			got[c.Name] = c.Status
		}
	}
	for name, s := range want {
		if got[name] != s {
			t.Errorf("%s: %s, want %s", name, got[name], s)
		}
	}
	if u := rep.Unchecked(); len(u) != 1 || !strings.HasSuffix(u[0], "/same/room") {
		t.Errorf("unchecked: %v", u)
	}
	out := text(rep)
	if strings.Contains(out, "csp_") {
		t.Errorf("a token was printed:\n%s", out)
	}
	wantFail(t, rep, "room forked", "not the one logged")
	wantFail(t, rep, "room late", "not in the log", "its last head there is seq 3, leaf 2")
	if t.Failed() {
		t.Log(out)
	}
	// The log itself checked out, so the state moved on even though rooms
	// failed.
	if st := mustState(t, cfg.StatePath); st.Size != 5 || st.Heads["late"].Seq != 3 {
		t.Fatalf("state: %+v", st)
	}
}

func TestParseRooms(t *testing.T) {
	t.Parallel()
	rooms, err := ParseRooms([]byte("# rooms\n\nhttps://consensus.md/api/v1/agent/invitations/a/room csp_1\n  http://127.0.0.1:8080/i/room\tcsp_2  \n"))
	if err != nil || len(rooms) != 2 || rooms[1].Token != "csp_2" || rooms[1].URL != "http://127.0.0.1:8080/i/room" {
		t.Fatalf("%+v %v", rooms, err)
	}
	for _, bad := range []string{"https://x/room", "https://x/room csp_1 extra", "ftp://x/room csp_1", "csp_1 https://x/room"} {
		if _, err := ParseRooms([]byte(bad)); err == nil || strings.Contains(err.Error(), "csp_1") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
