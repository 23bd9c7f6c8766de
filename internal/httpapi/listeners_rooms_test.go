package httpapi_test

// The rooms and posts of the many-listeners test: setting up rooms of
// joined participants, posting into them, and booking each wake-up.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/ingest"
	"github.com/consensus-md/consensus/internal/servertest"
)

type listenRoom struct {
	id     string
	parts  []*listenPart
	digest string
	rev    int
}

type listenPart struct {
	inv, pid, token string
}

// setUpListenerRooms creates nRooms agreements of perRoom participants and
// joins every participant (exchange and claim).
func setUpListenerRooms(ctx context.Context, t *testing.T, s *servertest.Server, nRooms, perRoom int) []*listenRoom {
	t.Helper()
	rooms := make([]*listenRoom, nRooms)
	byInv := map[string]*listenPart{}
	for i := range rooms {
		a := servertest.Agreement{Title: fmt.Sprintf("Listeners %d", i), Objective: "Wake every listener.", Deadline: time.Now().Add(24 * time.Hour)}
		for j := range perRoom {
			a.Participants = append(a.Participants, servertest.Participant{
				DisplayName: fmt.Sprintf("P%d", j), Kind: "agent", Email: fmt.Sprintf("p%d.r%d@example.test", j, i), Required: true})
		}
		c, err := s.CreateAgreement(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		r := &listenRoom{id: c.AgreementID}
		for _, p := range c.Participants {
			lp := &listenPart{inv: p.InvitationID, pid: p.ParticipantID}
			r.parts = append(r.parts, lp)
			byInv[p.InvitationID] = lp
		}
		rooms[i] = r
	}
	if err := s.WaitForMail(ctx, nRooms*perRoom); err != nil {
		t.Fatal(err)
	}
	invs := map[string]*envelope.Invitation{}
	for _, sub := range []string{"new", "cur"} {
		files, _ := filepath.Glob(filepath.Join(s.Maildir, sub, "*"))
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			inv, err := ingest.ParseMessageBytes(raw, envelope.Policy{Origin: s.URL, AllowHTTPLoopback: true})
			if err != nil {
				t.Fatal(err)
			}
			invs[inv.InvitationID] = inv
		}
	}
	roomOf := map[*listenPart]*listenRoom{}
	for _, r := range rooms {
		for _, p := range r.parts {
			roomOf[p] = r
		}
	}
	jobs := make(chan *listenPart)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range 8 {
		wg.Go(func() {
			for p := range jobs {
				inv := invs[p.inv]
				if inv == nil {
					t.Errorf("no invitation email for %s", p.inv)
					continue
				}
				var ex struct {
					SessionToken   string `json:"sessionToken"`
					RevisionDigest string `json:"revisionDigest"`
					RevisionNumber int    `json:"revisionNumber"`
				}
				if err := postJSON(ctx, inv.ExchangeURL, "", map[string]string{"secret": inv.Secret}, &ex); err != nil {
					t.Error(err)
					continue
				}
				var cl struct {
					ParticipantToken string `json:"participantToken"`
				}
				if err := postJSON(ctx, inv.ClaimURL, "Consensus-Session "+ex.SessionToken, map[string]string{"emailProof": inv.EmailProof, "inbox": inv.Inbox}, &cl); err != nil {
					t.Error(err)
					continue
				}
				mu.Lock()
				p.token = cl.ParticipantToken
				r := roomOf[p]
				r.digest, r.rev = ex.RevisionDigest, ex.RevisionNumber
				mu.Unlock()
			}
		})
	}
	for p := range byInv {
		jobs <- byInv[p]
	}
	close(jobs)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return rooms
}

func postJSON(ctx context.Context, url, auth string, body any, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, answer)
	}
	return json.Unmarshal(answer, out)
}

// wakes books when each post was sent and when each listener read it.
type wakes struct {
	mu   sync.Mutex
	sent map[string]time.Time // room/seq → before the post was sent
	done map[string]time.Time // room/seq → when its answer arrived
	// afterAnswer are the wake-ups counted from the post's answer instead.
	afterAnswer []time.Duration
	early       map[string][]time.Time // arrivals before their post's seq was known
	lat         []time.Duration
	n           atomic.Int64
	// appends are the posts' own latencies, from sending to the answer.
	appends []time.Duration
}

func (w *wakes) arrived(room string, seq int64, at time.Time) {
	k := room + "/" + strconv.FormatInt(seq, 10)
	w.mu.Lock()
	defer w.mu.Unlock()
	if t0, ok := w.sent[k]; ok {
		w.lat = append(w.lat, at.Sub(t0))
		w.afterAnswer = append(w.afterAnswer, at.Sub(w.done[k]))
	} else {
		w.early[k] = append(w.early[k], at)
	}
	w.n.Add(1)
}

func (w *wakes) posted(room string, seq int64, t0, answered time.Time) {
	k := room + "/" + strconv.FormatInt(seq, 10)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent[k], w.done[k] = t0, answered
	w.appends = append(w.appends, answered.Sub(t0))
	for _, at := range w.early[k] {
		w.lat = append(w.lat, at.Sub(t0))
		w.afterAnswer = append(w.afterAnswer, at.Sub(answered))
	}
	delete(w.early, k)
}

func (w *wakes) count() int64 { return w.n.Load() }

func (w *wakes) latencies() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lat)
}

var postKeys atomic.Int64

func postToRoom(ctx context.Context, t *testing.T, s *servertest.Server, r *listenRoom, wave int, book *wakes) {
	p := r.parts[wave%len(r.parts)]
	body, _ := json.Marshal(map[string]any{"action": "comment", "body": fmt.Sprintf("Wave %d.", wave), "revision": r.rev, "digest": r.digest})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/api/v1/agent/invitations/"+p.inv+"/events", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Consensus-Participant "+p.token)
	req.Header.Set("Idempotency-Key", "listen-"+strconv.FormatInt(postKeys.Add(1), 10))
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("post: %v", err)
		return
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var ev struct {
		Event struct {
			Seq int64 `json:"seq"`
		} `json:"event"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &ev) != nil || ev.Event.Seq == 0 {
		t.Errorf("post: %d %.200s", resp.StatusCode, raw)
		return
	}
	book.posted(r.id, ev.Event.Seq, t0, time.Now())
}
