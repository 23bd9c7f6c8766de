package mcpfacade_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/fwtest"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/mcpfacade"
	"github.com/consensus-md/consensus/internal/record"
	"github.com/consensus-md/consensus/internal/servertest"
)

var b64 = base64.RawURLEncoding

// joinKeyed exchanges and claims inv over REST binding priv's public key,
// as an agent does before MCP (which starts with a participant token).
func joinKeyed(t *testing.T, s *servertest.Server, inv fwtest.Invite, priv ed25519.PrivateKey) string {
	t.Helper()
	base := "/api/v1/agent/invitations/" + inv.InvitationID
	var ex struct {
		SessionToken   string `json:"sessionToken"`
		AgreementID    string `json:"agreementId"`
		RevisionNumber int    `json:"revisionNumber"`
		RevisionDigest string `json:"revisionDigest"`
		Participant    struct {
			ParticipantID string `json:"participantId"`
		} `json:"participant"`
	}
	postJSON(t, s, base+"/exchange", "", map[string]any{"secret": inv.Secret}, &ex)
	pub := map[string]any{"kty": "OKP", "crv": "Ed25519", "x": b64.EncodeToString(priv.Public().(ed25519.PublicKey))}
	binding, err := canon.Marshal(map[string]any{
		"schema": s.Origin + "/schemas/participant-binding/v2", "version": 2, "agreement_id": ex.AgreementID, "invitation_id": inv.InvitationID,
		"participant_id": ex.Participant.ParticipantID, "inbox": strings.ToLower(inv.Inbox), "runtime_endpoint": nil,
		"assurance": "recipient-email-proof-possession+key-possession", "revision": ex.RevisionNumber, "revision_digest": ex.RevisionDigest, "public_key": pub,
	})
	if err != nil {
		t.Fatal(err)
	}
	var cl struct {
		ParticipantToken  string `json:"participantToken"`
		CountsAsSignature bool   `json:"countsAsSignature"`
	}
	postJSON(t, s, base+"/claim", "Consensus-Session "+ex.SessionToken, map[string]any{
		"emailProof": inv.EmailProof, "inbox": inv.Inbox, "publicKey": pub, "keyProof": b64.EncodeToString(ed25519.Sign(priv, binding)),
	}, &cl)
	if !cl.CountsAsSignature {
		t.Fatal("the keyed claim does not count as a signature")
	}
	return cl.ParticipantToken
}

func postJSON(t *testing.T, s *servertest.Server, path, auth string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// TestMCPKeyedAgentEndToEnd: an agent that bound a key and knows only what
// tools/list tells it stays on MCP from its first read to the verified
// record: it waits for the other participant with wait_for_change (held
// past the server's database deadline and its read and write timeouts,
// woken by the other's post), is refused unsigned exactly as REST refuses
// it, signs the bytes command_to_sign gives, decides, and verifies the
// record fetch_record embeds against the published keys.
func TestMCPKeyedAgentEndToEnd(t *testing.T) {
	t.Parallel()
	s := servertest.New(t, servertest.Options{Settings: map[string]string{
		"CONSENSUS_DB_TIMEOUT": "1s", "CONSENSUS_READ_HEADER_TIMEOUT": "1s", "CONSENSUS_READ_TIMEOUT": "1s", "CONSENSUS_WRITE_TIMEOUT": "2s",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := s.CreateAgreement(ctx, servertest.Agreement{
		Title: "Keyed MCP room", Objective: "Agree on the release window.", Rules: []string{"Weekdays only"},
		Deadline: s.Clock.Now().Add(48 * time.Hour).Truncate(time.Second),
		Participants: []servertest.Participant{
			{DisplayName: "Ada", Kind: "agent", Email: "ada@agentmail.to", Required: true},
			{DisplayName: "Bo", Kind: "agent", Email: "bo@agentmail.to", Required: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	seed := sha256.Sum256([]byte("consensus-md TEST KEY, never use for anything real: mcp ada"))
	priv := ed25519.NewKeyFromSeed(seed[:])
	ada := &bearer{base: s.Client.Transport}
	ada.token.Store(joinKeyed(t, s, fwtest.ReadInvite(t, s, c.Participants[0].InvitationID), priv))
	bo := &bearer{base: s.Client.Transport}
	bo.token.Store(fwtest.Join(t, s, fwtest.ReadInvite(t, s, c.Participants[1].InvitationID)))
	csAda, csBo := connect(t, s, ada), connect(t, s, bo)

	// initialize announces tools, and no listChanged: nothing is ever sent.
	caps := csAda.InitializeResult().Capabilities
	if caps.Tools == nil || caps.Tools.ListChanged || caps.Resources != nil || caps.Prompts != nil {
		t.Fatalf("initialize capabilities: %+v", caps)
	}
	// Only what tools/list describes.
	list, err := csAda.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]string{}
	for _, tool := range list.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		schemas[tool.Name] = string(b) + tool.Description
	}
	for name, want := range map[string]string{"wait_for_change": `"afterSeq"`, "command_to_sign": `"idempotencyKey"`, "decide": `"signature"`, "post_advisory": `"signature"`} {
		if !strings.Contains(schemas[name], want) {
			t.Fatalf("tools/list: %s lacks %s: %s", name, want, schemas[name])
		}
	}

	room := structured[mcpfacade.RoomResult](t, "read_room", call(t, csAda, "read_room", nil))
	digest := room.Revision.RevisionDigest
	if len(room.Version) != 32 || len(room.Events) != 0 {
		t.Fatalf("read_room: version %q, %d events", room.Version, len(room.Events))
	}

	// Nothing happens: the wait is held its whole length, past the database
	// deadline and the server's read and write timeouts, and says so.
	start := time.Now()
	quiet := structured[mcpfacade.WaitResult](t, "wait_for_change", call(t, csAda, "wait_for_change", map[string]any{"afterSeq": 0, "version": room.Version, "waitSeconds": 3}))
	if took := time.Since(start); quiet.Changed || took < 3*time.Second || took > 8*time.Second || quiet.Version != room.Version || quiet.Next != 0 {
		t.Fatalf("a quiet wait: %+v after %s", quiet, took)
	}

	// Bo comments while Ada waits: the wait answers with the comment.
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		time.Sleep(500 * time.Millisecond)
		res, _ := csBo.CallTool(ctx, &mcp.CallToolParams{Name: "post_advisory", Arguments: map[string]any{
			"action": "comment", "body": "Tuesday suits me.", "revision": 1, "digest": digest, "idempotencyKey": "bo-comment-1"}})
		done <- res
	}()
	start = time.Now()
	woke := structured[mcpfacade.WaitResult](t, "wait_for_change", call(t, csAda, "wait_for_change", map[string]any{"afterSeq": 0, "version": room.Version}))
	if took := time.Since(start); !woke.Changed || took > 10*time.Second || len(woke.Events) != 1 || woke.Events[0].Body.Text != "Tuesday suits me." ||
		!woke.Events[0].Body.Untrusted || woke.Next != 1 || woke.Version == room.Version || woke.Final || woke.More {
		t.Fatalf("the wait did not answer the comment: %+v after %s", woke, took)
	}
	if res := <-done; res == nil || res.IsError {
		t.Fatal("Bo's comment was refused")
	}
	// An earlier version answers at once.
	if again := structured[mcpfacade.WaitResult](t, "wait_for_change", call(t, csAda, "wait_for_change", map[string]any{"afterSeq": 1, "version": room.Version})); !again.Changed || len(again.Events) != 0 {
		t.Fatalf("a stale version: %+v", again)
	}

	// Unsigned, Ada is refused as REST refuses it; a signature over other
	// bytes is refused too. Nothing is recorded.
	// The refusals speak MCP: the signature is an argument, not a header.
	decide := map[string]any{"decision": "agree", "revision": 1, "digest": digest, "confirm": true, "idempotencyKey": "ada-decide-1"}
	speaksMCP(t, "unsigned decide", call(t, csAda, "decide", decide), "signature-required")
	speaksMCP(t, "unsigned comment", call(t, csAda, "post_advisory", map[string]any{
		"action": "comment", "body": "Agreed.", "revision": 1, "digest": digest, "idempotencyKey": "ada-comment-1"}), "signature-required")
	speaksMCP(t, "a signature that is no signature", call(t, csAda, "post_advisory", map[string]any{
		"action": "comment", "body": "Agreed.", "revision": 1, "digest": digest, "idempotencyKey": "ada-comment-1", "signature": "nope"}), "bad-signature")
	speaksMCP(t, "a signature by one without a key", call(t, csBo, "post_advisory", map[string]any{
		"action": "comment", "body": "Agreed.", "revision": 1, "digest": digest, "idempotencyKey": "bo-comment-2", "signature": strings.Repeat("A", 86)}), "bad-signature")
	toSign := structured[mcpfacade.SignResult](t, "command_to_sign", call(t, csAda, "command_to_sign", map[string]any{
		"action": "agree", "revision": 1, "digest": digest, "idempotencyKey": "ada-decide-1"}))
	raw, err := b64.DecodeString(toSign.CanonicalBase64)
	if err != nil || string(raw) != toSign.Canonical || canon.Digest(raw) != toSign.SHA256 || !strings.Contains(toSign.Canonical, `"action":"agree"`) {
		t.Fatalf("command_to_sign: %+v", toSign)
	}
	decide["signature"] = b64.EncodeToString(ed25519.Sign(priv, append(raw, '\n')))
	refused(t, "a signature over other bytes", call(t, csAda, "decide", decide), "bad-signature")
	decide["signature"] = b64.EncodeToString(ed25519.Sign(priv, raw))
	decided := structured[mcpfacade.PostResult](t, "decide", call(t, csAda, "decide", decide))
	if !decided.Created || decided.Outcome.Status != "pending" {
		t.Fatalf("decide: %+v", decided)
	}
	// The stored signature shows, as on REST; the version is the room's
	// after this post, so a wait from it is not woken by the post itself.
	if decided.Event.Signature == nil || *decided.Event.Signature != decide["signature"] {
		t.Fatalf("decide's event does not show the stored signature: %+v", decided.Event)
	}
	after := structured[mcpfacade.RoomResult](t, "read_room", call(t, csAda, "read_room", nil))
	if decided.Version == "" || decided.Version != after.Version {
		t.Fatalf("decide's version %q, the room's after it %q", decided.Version, after.Version)
	}
	for _, e := range after.Events {
		if mine := e.ParticipantID == room.You.ParticipantID; mine != (e.Signature != nil) {
			t.Fatalf("read_room: event %d by %s shows signature %v", e.Seq, e.ParticipantID, e.Signature)
		}
	}
	start = time.Now()
	if own := structured[mcpfacade.WaitResult](t, "wait_for_change", call(t, csAda, "wait_for_change", map[string]any{
		"afterSeq": decided.Event.Seq, "version": decided.Version, "waitSeconds": 1})); own.Changed || time.Since(start) < time.Second {
		t.Fatalf("a wait from decide's version answered at once on Ada's own decision: %+v", own)
	}

	// Bo agrees; Ada's next wait reports the final outcome.
	if res := call(t, csBo, "decide", map[string]any{"decision": "agree", "revision": 1, "digest": digest, "confirm": true, "idempotencyKey": "bo-decide-1"}); res.IsError {
		t.Fatalf("Bo's decision: %s", text(res))
	}
	final := structured[mcpfacade.WaitResult](t, "wait_for_change", call(t, csAda, "wait_for_change", map[string]any{"afterSeq": 2}))
	if !final.Final || final.Outcome.Status != "reached" || len(final.Events) != 1 || final.Events[0].Action != "agree" || final.Events[0].Signature != nil {
		t.Fatalf("after both decisions: %+v", final)
	}
	if mine := structured[mcpfacade.WaitResult](t, "wait_for_change", call(t, csAda, "wait_for_change", map[string]any{"afterSeq": 1})); len(mine.Events) != 2 ||
		mine.Events[0].Signature == nil || *mine.Events[0].Signature != decide["signature"] {
		t.Fatalf("wait_for_change does not show Ada's stored signature: %+v", mine.Events)
	}

	// CONSENSUS.md names the key that signed Ada's decision, and no key for
	// Bo's, which no key signed.
	art := structured[mcpfacade.ArtifactResult](t, "fetch_artifact", call(t, csAda, "fetch_artifact", nil))
	thumb := jwk.FromPrivate(priv).Thumbprint()
	if !strings.Contains(art.Markdown, "): agree signed with the key of RFC 7638 thumbprint `"+thumb+"`\n") ||
		strings.Count(art.Markdown, "signed with the key of RFC 7638 thumbprint") != 1 {
		t.Fatalf("CONSENSUS.md does not mark Ada's signed decision with her key's thumbprint %s, and only it:\n%s", thumb, art.Markdown)
	}

	// The record, from the embedded resource alone, verifies against the
	// published keys, Ada's signature included.
	res := call(t, csAda, "fetch_record", nil)
	rec := recordResource(t, res)
	resp, err := s.Client.Get(s.URL + "/.well-known/consensus-keys")
	if err != nil {
		t.Fatal(err)
	}
	var set jwk.Set
	err = json.NewDecoder(resp.Body).Decode(&set)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	rep := record.Verify([]byte(rec.Text), record.Options{Keys: &set})
	if !rep.OK() || !rep.Authenticated() {
		t.Fatalf("the embedded record does not verify: %+v", rep.Failed)
	}
	if !slices.ContainsFunc(rep.Passed, func(f record.Finding) bool { return f.Check == record.CheckParticipantSignature }) {
		t.Fatalf("no participant signature was checked: %+v", rep.Passed)
	}
	changed := []byte(rec.Text)
	changed[strings.Index(rec.Text, "Tuesday")] = 't'
	if rep := record.Verify(changed, record.Options{Keys: &set}); rep.OK() {
		t.Fatal("a changed byte verified")
	}
}

// speaksMCP asserts a refusal with code whose words are MCP's: the
// signature and the idempotency key are arguments of the call, and no
// HTTP header is named.
func speaksMCP(t *testing.T, name string, res *mcp.CallToolResult, code string) {
	t.Helper()
	refused(t, name, res, code)
	words := text(res)
	for _, rest := range []string{"header", "Consensus-Signature", "Idempotency-Key", "request"} {
		if strings.Contains(words, rest) {
			t.Errorf("%s: the refusal speaks REST (%q):\n%s", name, rest, words)
		}
	}
	if !strings.Contains(words, "signature argument") {
		t.Errorf("%s: the refusal does not name the signature argument:\n%s", name, words)
	}
}
