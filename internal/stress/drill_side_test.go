package stress

import (
	"bytes"
	"context"
	"encoding/pem"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// hookSink is a real HTTPS webhook receiver that answers 200 and counts
// each webhook-id it heard.
type hookSink struct {
	*httptest.Server
	caFile string
	mu     sync.Mutex
	ids    map[string]int
}

func newHookSink(t *testing.T) *hookSink {
	t.Helper()
	h := &hookSink{ids: map[string]int{}}
	h.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.ids[r.Header.Get("webhook-id")]++
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	h.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(h.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// register has an optional participant (required ones do not) register
// the sink as its webhook.
func (h *hookSink) register(l *load, rng *rand.Rand, p *lp, token string) {
	if p.required {
		return
	}
	a := l.call(rng, attempt{Kind: "webhook", ParticipantID: p.pid, InvitationID: p.inv, AsParticipant: true}, false, func(base string) request {
		return request{Method: "PUT", URL: agentURL(base, p.inv, "webhook"), Header: hdr("Authorization", participantAuth(token)),
			Body: []byte(`{"url":"` + h.URL + `/hook"}`)}
	})
	if a.Status != http.StatusOK && !l.led.revoking(p.pid) {
		l.led.note("webhook %s: %d %s %s", p.inv, a.Status, a.Code, a.Err)
	}
}

// unqueuedChanges lists the room changes a live webhook registered before
// them got no delivery for: each transaction that appended to a room
// (its events share an xmin) owes every endpoint of a participant never
// revoked a room.event delivery with the room's head seq after it. An
// endpoint was registered before a change when an earlier change of the
// room got a delivery to it (after its created_at), or when its created_at
// is more than a second older than the change's: created_at is the time
// the registration's request began, and the registration commits only once
// it holds the room's row, which an append under way holds until it
// commits, so a change stamped a little after it may still precede it.
func unqueuedChanges(t testing.TB, v *venue) []string {
	return dbStrings(t, v, `WITH g AS (
			SELECT agreement_id, xmin::text AS x, max(seq) AS seq, min(created_at) AS at FROM events GROUP BY 1, 2)
		SELECT concat(g.agreement_id, ' seq ', g.seq, ' to ', w.participant_id)
		FROM g JOIN webhooks w ON w.agreement_id = g.agreement_id AND w.disabled_at IS NULL
		JOIN participants p ON p.id = w.participant_id AND p.revoked_at IS NULL
		WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.participant_id = w.participant_id AND d.type = 'room.event' AND d.seq = g.seq)
		  AND (w.created_at < g.at - interval '1 second'
		       OR EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.participant_id = w.participant_id AND d.type = 'room.event'
		                  AND d.seq < g.seq AND d.created_at >= w.created_at))
		ORDER BY 1`)
}

// heard returns how often each webhook-id arrived.
func (h *hookSink) heard() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.ids))
	for k, v := range h.ids {
		out[k] = v
	}
	return out
}

// messageIDs counts the Message-IDs of the Maildir's messages (without
// their angle brackets).
func (m *mailbox) messageIDs() map[string]int {
	out := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(m.dir, "new", "*"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pm, err := netmail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			continue
		}
		out[strings.Trim(strings.TrimSpace(pm.Header.Get("Message-Id")), "<>")]++
	}
	return out
}

// dbStrings runs q, whose rows are one text column each.
func dbStrings(t testing.TB, v *venue, q string) []string {
	t.Helper()
	rows, err := v.db.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// missing lists the ids of want that got never heard, waiting up to d for
// them to arrive (a delivery or email may be retried after the failover).
func missing(want func() []string, heard func() map[string]int, d time.Duration) []string {
	var out []string
	eventually(d, func() bool {
		out = out[:0]
		h := heard()
		for _, id := range want() {
			if h[id] == 0 {
				out = append(out, id)
			}
		}
		return len(out) == 0
	})
	return out
}

// heldReaders keep held reads (Prefer: wait) open on every replica for
// the whole drill, each reader on its own participant once one has
// claimed, and count what they were answered.
type heldReaders struct {
	v        *venue
	statuses sync.Map // status → *atomic.Int64
	stop     chan struct{}
	wg       sync.WaitGroup
}

func (h *heldReaders) count(status int) {
	c, _ := h.statuses.LoadOrStore(status, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
}

// read holds reads of inv's room with token on replica i until stop, each
// for up to 2 s, as an agent waiting for the others would.
func (h *heldReaders) read(i int, inv, token string) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		etag := ""
		for {
			select {
			case <-h.stop:
				return
			default:
			}
			hd := hdr("Authorization", participantAuth(token), "Prefer", "wait=2")
			if etag != "" {
				hd = hdr("Authorization", participantAuth(token), "Prefer", "wait=2", "If-None-Match", etag)
			}
			r := h.v.do(request{Method: "GET", URL: agentURL(h.v.url(i), inv, "room"), Header: hd, Timeout: 15 * time.Second})
			if r.Err != nil {
				h.count(0)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			h.count(r.Status)
			if r.Status == http.StatusOK {
				etag = r.Header.Get("ETag")
			}
			if r.Status >= 400 {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
}

// done stops the readers and returns their answers by status.
func (h *heldReaders) done() map[int]int64 {
	close(h.stop)
	h.wg.Wait()
	out := map[int]int64{}
	h.statuses.Range(func(k, v any) bool {
		out[k.(int)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}
