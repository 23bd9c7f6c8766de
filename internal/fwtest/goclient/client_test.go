package goclient_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/fwtest"
	"github.com/consensus-md/consensus/internal/fwtest/goclient/oapiclient"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/servertest"
)

// oapiCodegen is the generator an agent developer runs, at the version the
// committed client was made with.
const oapiCodegen = "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2"

// TestGoClientIsCurrent regenerates the oapi-codegen client from
// openapi-agent.json and fails when the committed one differs: run
// `make generate`.
func TestGoClientIsCurrent(t *testing.T) {
	t.Parallel()
	root := fwtest.Root(t)
	cfg, err := os.ReadFile(filepath.Join(root, "internal/fwtest/goclient/oapiclient/oapi-codegen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "client.gen.go")
	tmpCfg := filepath.Join(t.TempDir(), "oapi-codegen.yaml")
	cfg = bytes.Replace(cfg, []byte("output: internal/fwtest/goclient/oapiclient/client.gen.go"), []byte("output: "+out), 1)
	if err := os.WriteFile(tmpCfg, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	fwtest.Run(t, 5*time.Minute, nil, "go", "run", oapiCodegen, "-config", tmpCfg, "openapi-agent.json")
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(root, "internal/fwtest/goclient/oapiclient/client.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Fatal("internal/fwtest/goclient/oapiclient/client.gen.go is stale: run make generate")
	}
}

// goFlow runs exchange → claim → room → comment → agree → artifact with the
// generated Go client against baseURL (the server, or Prism in front of it)
// and checks every digest and hash the way an agent would. Each step goes
// through the client of its credential (credentials.gen.go), which has
// only the methods that credential opens. It returns the participant's
// token and the hashes of the room's events, in seq order.
func goFlow(t *testing.T, baseURL string, hc *http.Client, inv fwtest.Invite) (oapiclient.ParticipantToken, []string) {
	t.Helper()
	ctx := context.Background()
	c, err := oapiclient.NewClientWithResponses(baseURL, oapiclient.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.MustParse(inv.InvitationID)
	ex, err := oapiclient.NewPublicClient(c).ExchangeInvitationWithResponse(ctx, id, oapiclient.ExchangeRequest{Secret: &inv.Secret})
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if ex.JSON200 == nil {
		t.Fatalf("exchange: HTTP %d: %s", ex.StatusCode(), ex.Body)
	}
	// Verify the revision from the bytes received, not a re-encoding.
	var raw struct {
		CanonicalRevision json.RawMessage `json:"canonicalRevision"`
	}
	if err := json.Unmarshal(ex.Body, &raw); err != nil {
		t.Fatal(err)
	}
	if cb, err := canon.Transform(raw.CanonicalRevision); err != nil || canon.Digest(cb) != ex.JSON200.RevisionDigest {
		t.Fatalf("revisionDigest does not verify: %v", err)
	}
	session := oapiclient.NewSessionClient(c, oapiclient.SessionToken(ex.JSON200.SessionToken))
	cl, err := session.ClaimSlotWithResponse(ctx, id, oapiclient.ClaimRequest{EmailProof: inv.EmailProof, Inbox: inv.Inbox})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if cl.JSON200 == nil {
		t.Fatalf("claim: HTTP %d: %s", cl.StatusCode(), cl.Body)
	}
	token := oapiclient.ParticipantToken(cl.JSON200.ParticipantToken)
	p := oapiclient.NewParticipantClient(c, token)
	rm, err := p.ReadRoomWithResponse(ctx, id, &oapiclient.ReadRoomParams{})
	if err != nil {
		t.Fatalf("room: %v", err)
	}
	if rm.JSON200 == nil {
		t.Fatalf("room: HTTP %d: %s", rm.StatusCode(), rm.Body)
	}
	digest := rm.JSON200.Revision.RevisionDigest
	text := "Weekdays suit the Go agent."
	cm, err := p.PostEventWithResponse(ctx, id, &oapiclient.PostEventParams{IdempotencyKey: "go-comment-0001"},
		oapiclient.EventRequest{Action: oapiclient.ActionComment, Body: &text, Revision: 1, Digest: digest})
	if err != nil {
		t.Fatalf("comment: %v", err)
	}
	if cm.JSON201 == nil {
		t.Fatalf("comment: HTTP %d: %s", cm.StatusCode(), cm.Body)
	}
	// The agent's own event hash recomputes from served fields. The client
	// decoded createdAt as a time; the fixed six-digit shape makes
	// re-formatting it give back the very string that was hashed.
	ev := cm.JSON201.Event
	_, cmdDigest, err := canon.DigestOf(room.Command{
		Schema: baseURLOrigin(t, rm.JSON200.Revision.CanonicalRevision.Issuer) + "/schemas/room-command/v1", Version: 1,
		AgreementID: rm.JSON200.AgreementId.String(), InvitationID: inv.InvitationID, ParticipantID: cl.JSON200.ParticipantId.String(),
		Revision: ev.Revision, RevisionDigest: digest, Action: string(ev.Action), Body: ev.Body,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, hash, err := canon.DigestOf(map[string]any{"prev": ev.Prev, "seq": ev.Seq, "command_digest": cmdDigest,
		"created_at": ev.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000Z")})
	if err != nil || hash != ev.Hash {
		t.Fatalf("the event hash does not recompute from the served fields: %v", err)
	}
	wrong := strings.Repeat("0", 64)
	stale, err := p.PostEventWithResponse(ctx, id, &oapiclient.PostEventParams{IdempotencyKey: "go-agree-stale"},
		oapiclient.EventRequest{Action: oapiclient.ActionAgree, Revision: 1, Digest: wrong})
	if err != nil {
		t.Fatalf("a wrong digest: %v", err)
	}
	if stale.ApplicationproblemJSON409 == nil || !strings.Contains(stale.ApplicationproblemJSON409.Detail, digest) {
		t.Fatalf("a wrong digest: HTTP %d: %s", stale.StatusCode(), stale.Body)
	}
	ag, err := p.PostEventWithResponse(ctx, id, &oapiclient.PostEventParams{IdempotencyKey: "go-agree-0001"},
		oapiclient.EventRequest{Action: oapiclient.ActionAgree, Revision: 1, Digest: "sha256:" + digest})
	if err != nil {
		t.Fatalf("agree: %v", err)
	}
	if ag.JSON201 == nil || ag.JSON201.Outcome.Status != oapiclient.OutcomeStatusReached {
		t.Fatalf("agree: HTTP %d: %s", ag.StatusCode(), ag.Body)
	}
	art, err := p.GetArtifactWithResponse(ctx, id, &oapiclient.GetArtifactParams{})
	if err != nil {
		t.Fatalf("artifact: %v", err)
	}
	if art.StatusCode() != http.StatusOK {
		t.Fatalf("artifact: HTTP %d: %s", art.StatusCode(), art.Body)
	}
	sum := sha256.Sum256(art.Body)
	h := art.HTTPResponse.Header
	if h.Get("X-Consensus-SHA256") != canon.Digest(art.Body) || h.Get("Content-Digest") != "sha-256=:"+base64.StdEncoding.EncodeToString(sum[:])+":" {
		t.Fatal("the artifact bytes do not match their digest headers")
	}
	after, err := p.ReadRoomWithResponse(ctx, id, &oapiclient.ReadRoomParams{})
	if err != nil || after.JSON200 == nil || after.JSON200.Artifact == nil || after.JSON200.Artifact.Sha256 != canon.Digest(art.Body) {
		t.Fatalf("the room does not name the artifact: %v", err)
	}
	var hashes []string
	for _, e := range after.JSON200.Events {
		hashes = append(hashes, e.Hash)
	}
	return token, hashes
}

// baseURLOrigin is the issuer the revision names, which is the origin
// every schema URL of this deployment uses.
func baseURLOrigin(t *testing.T, issuer string) string {
	t.Helper()
	if !strings.HasPrefix(issuer, "http") {
		t.Fatalf("issuer %q", issuer)
	}
	return issuer
}

// TestGoClientFlow drives the flow with the oapi-codegen client through
// the contract-checking transport.
func TestGoClientFlow(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{})
	inv := fwtest.Agreement(t, s, "Go client")
	token, hashes := goFlow(t, s.URL, s.Client, inv)

	// The stream, read as the contract's typed messages: every stored event
	// from the start, in seq order, then the outcome, which is final here.
	// The contract-checking transport reads a whole body before it answers,
	// so the stream, which stays open, is read without it.
	plain, err := oapiclient.NewClientWithResponses(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := oapiclient.NewParticipantClient(plain, token).StreamRoomMessages(ctx, uuid.MustParse(inv.InvitationID), &oapiclient.StreamRoomParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var streamed []string
	for final := false; !final || len(streamed) < len(hashes); {
		m, err := stream.Next()
		if err != nil {
			t.Fatalf("after %d events: %v", len(streamed), err)
		}
		v, err := m.ValueByDiscriminator()
		if err != nil {
			t.Fatal(err)
		}
		switch v := v.(type) {
		case oapiclient.StreamRoomEvent:
			if v.Id != strconv.Itoa(v.Data.Seq) {
				t.Fatalf("stream id %s for seq %d", v.Id, v.Data.Seq)
			}
			streamed = append(streamed, v.Data.Hash)
		case oapiclient.StreamRoomOutcome:
			final = v.Data.Status == oapiclient.OutcomeStatusReached
		default:
			t.Fatalf("no revision was locked, yet the stream sent %T", v)
		}
	}
	if !slices.Equal(streamed, hashes) {
		t.Fatalf("the stream's events %v differ from the room's %v", streamed, hashes)
	}
}
