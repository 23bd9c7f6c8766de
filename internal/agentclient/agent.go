package agentclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/envelope"
	"github.com/consensus-md/consensus/internal/jwk"
)

// Agent is one invited agent's runtime over a state directory.
type Agent struct {
	State  *State
	Client *Client
	Log    *slog.Logger
	// Policy pins the origin invitations must come from.
	Policy envelope.Policy
	// RuntimeEndpoint, when set, is declared in the claim (https only;
	// Consensus records it and never calls it).
	RuntimeEndpoint string
	// Sign binds a key per invitation at claim (kept under the state
	// directory's keys/), so that every later command is signed with it.
	Sign bool
	Now  func() time.Time
}

func (a *Agent) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

// VerifyError reports a digest or identity that does not match; the
// invitation is not claimed.
type VerifyError struct{ What string }

// Error says what did not match.
func (e *VerifyError) Error() string { return "agent: verify failed: " + e.What }

// Accept processes one validated invitation: exchange, verify the locked
// revision against the envelope and the exchange response, claim, and save
// the record. An invitation already in the state is returned as is. Errors:
// *VerifyError (nothing claimed), *APIError, network errors.
func (a *Agent) Accept(ctx context.Context, inv *envelope.Invitation) (*Record, bool, error) {
	if a.State.Has(inv.InvitationID) {
		r, err := a.State.Load(inv.InvitationID)
		return r, false, err
	}
	// The checks pinned the origin and the id; every action URL follows from
	// them, and the envelope's own two must be among them.
	acts := agentroute.For(inv.Origin, inv.InvitationID)
	if acts.Exchange != inv.ExchangeURL || acts.Claim != inv.ClaimURL {
		return nil, false, &VerifyError{"the envelope's exchange or claim URL is not the pinned action URL"}
	}
	x, err := a.Client.Exchange(ctx, acts.Exchange, inv.Secret)
	if err != nil {
		return nil, false, err
	}
	if err := verifyExchange(inv, x, acts); err != nil {
		return nil, false, err
	}
	req := ClaimRequest{EmailProof: inv.EmailProof, Inbox: inv.Inbox, RuntimeEndpoint: a.RuntimeEndpoint}
	var wantDigest string
	if a.Sign {
		// The key is stored before the claim: a claim whose answer is lost
		// is replayed with the same key, never a new one.
		priv, err := a.State.ParticipantKey(inv.InvitationID)
		if err != nil {
			return nil, false, err
		}
		pub, proof, digest, err := keyedBinding(inv.Origin, x, inv.Inbox, a.RuntimeEndpoint, priv)
		if err != nil {
			return nil, false, &VerifyError{"cannot build the keyed binding: " + err.Error()}
		}
		req.PublicKey, req.KeyProof, wantDigest = &pub, proof, digest
	}
	cl, err := a.Client.Claim(ctx, acts.Claim, x.SessionToken, req)
	if err != nil {
		return nil, false, err
	}
	if cl.ParticipantID != inv.ParticipantID || !strings.HasPrefix(cl.ParticipantToken, "csp_") {
		return nil, false, &VerifyError{"claim answered for another participant"}
	}
	if a.Sign && (!cl.CountsAsSignature || cl.BindingDigest != wantDigest) {
		return nil, false, &VerifyError{"the claim did not bind this runtime's key (bindingDigest or countsAsSignature differ)"}
	}
	var title struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(x.CanonicalRevision, &title)
	r := &Record{
		InvitationID: inv.InvitationID, AgreementID: inv.AgreementID, ParticipantID: inv.ParticipantID,
		DisplayName: x.Participant.DisplayName, Title: title.Title, Inbox: inv.Inbox, Origin: inv.Origin,
		Actions: acts, ParticipantToken: cl.ParticipantToken, BindingDigest: cl.BindingDigest,
		RevisionNumber: x.RevisionNumber, RevisionDigest: x.RevisionDigest, MarkdownDigest: x.MarkdownDigest,
		TermsDigest: termsOf(x.CanonicalRevision), CanonicalRevision: x.CanonicalRevision, ClaimedAt: a.now().UTC().Format(time.RFC3339), PublicKey: req.PublicKey,
	}
	if err := a.State.Save(r); err != nil {
		return nil, false, err
	}
	return r, true, nil
}

// verifyExchange recomputes both digests and checks every identifier
// against the envelope before anything is claimed.
func verifyExchange(inv *envelope.Invitation, x *Exchanged, acts agentroute.URLs) error {
	c, err := canon.Transform(x.CanonicalRevision)
	if err != nil {
		return &VerifyError{"canonicalRevision is not valid JSON"}
	}
	rev := canon.Digest(c)
	stated, err := canon.ParseDigest(x.RevisionDigest)
	if err != nil || stated != rev {
		return &VerifyError{"revisionDigest does not match the canonical revision"}
	}
	envDigest, err := canon.ParseDigest(inv.RevisionDigest)
	if err != nil {
		return &VerifyError{"the email's revision digest is not a digest"}
	}
	if err := emailRevisionLinked(inv.RevisionNumber, envDigest, x, rev); err != nil {
		return err
	}
	if md, err := canon.ParseDigest(x.MarkdownDigest); err != nil || md != canon.Digest([]byte(x.Markdown)) {
		return &VerifyError{"markdownDigest does not match the markdown"}
	}
	if x.TermsDigest != "" && x.TermsDigest != termsOf(x.CanonicalRevision) {
		return &VerifyError{"termsDigest does not match the canonical revision"}
	}
	if x.InvitationID != inv.InvitationID || x.AgreementID != inv.AgreementID || x.Participant.ParticipantID != inv.ParticipantID {
		return &VerifyError{"the exchange answered for another invitation, agreement or participant"}
	}
	var body struct {
		AgreementID string `json:"agreement_id"`
		Revision    int    `json:"revision"`
	}
	if json.Unmarshal(x.CanonicalRevision, &body) != nil || body.AgreementID != inv.AgreementID || body.Revision != x.RevisionNumber {
		return &VerifyError{"the canonical revision names another agreement or revision"}
	}
	if x.Actions.Claim != acts.Claim || x.Actions.Room != acts.Room || x.Actions.Events != acts.Events || x.Actions.Artifact != acts.Artifact {
		return &VerifyError{"the exchange's action URLs differ from the pinned ones"}
	}
	return nil
}

// Room reads the room of a claimed invitation and verifies its revision
// (digests, terms digest, agreement, history; see verifyRevision). A newer
// revision that verifies becomes the one on record and is logged with what
// it changed; one that does not is a *VerifyError, and neither the room nor
// the revision is used.
func (a *Agent) Room(ctx context.Context, invitationID string) (*Room, *Record, error) {
	room, rec, _, err := a.room(ctx, invitationID)
	return room, rec, err
}

// room is Room that also returns what a newly verified revision changed
// (nil when the revision is the one on record).
func (a *Agent) room(ctx context.Context, invitationID string) (*Room, *Record, *RevisionChange, error) {
	rec, err := a.State.Load(invitationID)
	if err != nil {
		return nil, nil, nil, err
	}
	room, err := a.Client.Room(ctx, rec.Actions.Room, rec.ParticipantToken)
	if err != nil {
		return nil, rec, nil, err
	}
	change, err := verifyRevision(rec, room)
	if err != nil {
		return nil, rec, nil, err
	}
	if change != nil || rec.TermsDigest == "" {
		if err := rec.adopt(room); err != nil {
			return nil, rec, nil, err
		}
		if err := a.State.Save(rec); err != nil {
			return nil, rec, nil, err
		}
	}
	if change != nil {
		a.Log.Info("agent: " + change.String())
	}
	return room, rec, change, nil
}

// Terminal reports whether action is a final decision.
func Terminal(action string) bool {
	return action == "agree" || action == "disagree" || action == "abstain"
}

// ErrDeclined is returned by Post when the confirmation callback declines.
var ErrDeclined = errors.New("agent: not confirmed; nothing sent")

// Post sends one room command. A command left pending by an earlier run
// (crash, lost answer) is sent first with its original Idempotency-Key. Then
// the room is read for the current revision and digest; for a terminal
// action confirm (when not nil) sees that room and may decline; the command
// and a fresh key are persisted (fsynced) before the request, and forgotten
// once the server answers definitively. On a network error or 5xx the
// pending command stays, and the next Post or Resume replays it.
func (a *Agent) Post(ctx context.Context, invitationID, action, body string, confirm func(*Room) error) (*Posted, error) {
	return a.post(ctx, invitationID, action, body, confirm, "")
}

// ErrTermsChanged is returned when a command was chosen on terms that are
// no longer the current ones: it is not sent, so a decision is never moved
// onto terms its author did not see.
var ErrTermsChanged = errors.New("agent: a revision with other terms was locked after the command was chosen; nothing sent")

// post is Post for a command chosen on the terms with digest terms (""
// when the caller reads the room itself, as a person confirming does): when
// the current revision's terms differ it returns ErrTermsChanged. A
// revision that kept the terms does not stop it; the command then names
// that revision.
func (a *Agent) post(ctx context.Context, invitationID, action, body string, confirm func(*Room) error, terms string) (*Posted, error) {
	if _, err := a.Resume(ctx, invitationID); err != nil {
		return nil, err
	}
	room, rec, _, err := a.room(ctx, invitationID)
	if err != nil {
		return nil, err
	}
	if terms != "" && rec.TermsDigest != terms {
		return nil, ErrTermsChanged
	}
	if Terminal(action) && confirm != nil {
		if err := confirm(room); err != nil {
			return nil, err
		}
	}
	p := &Pending{Key: newKey(), Command: Command{Action: action, Body: body, Revision: room.Revision.Number, Digest: room.Revision.RevisionDigest}}
	if err := a.State.SavePending(rec.InvitationID, p); err != nil {
		return nil, err
	}
	return a.send(ctx, rec, p)
}

// Resume sends the command a previous run persisted and did not finish, if
// any, and returns its result (nil when nothing was pending).
func (a *Agent) Resume(ctx context.Context, invitationID string) (*Posted, error) {
	rec, err := a.State.Load(invitationID)
	if err != nil {
		return nil, err
	}
	p, err := a.State.LoadPending(rec.InvitationID)
	if err != nil || p == nil {
		return nil, err
	}
	a.Log.Info("agent: replaying a command left pending", slog.String("invitation_id", rec.InvitationID), slog.String("action", p.Command.Action))
	return a.send(ctx, rec, p)
}

func (a *Agent) send(ctx context.Context, rec *Record, p *Pending) (*Posted, error) {
	var signature string
	if rec.PublicKey != nil {
		priv, err := a.State.storedKey(rec.InvitationID)
		if err != nil {
			return nil, err
		}
		if jwk.FromPrivate(priv) != *rec.PublicKey {
			return nil, errors.New("agent: the key under keys/ is not the one this invitation's claim bound; nothing sent")
		}
		if signature, err = commandSignature(rec, p.Key, p.Command, priv); err != nil {
			return nil, err
		}
	}
	posted, err := a.Client.PostEvent(ctx, rec.Actions.Events, rec.ParticipantToken, p.Key, p.Command, signature)
	if err != nil && !definitive(err) {
		return nil, fmt.Errorf("%w (kept pending; it is replayed with the same Idempotency-Key next time)", err)
	}
	if cerr := a.State.ClearPending(rec.InvitationID); cerr != nil {
		return nil, cerr
	}
	return posted, err
}

// newKey is a fresh Idempotency-Key matching [A-Za-z0-9._:-]{8,128}.
func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "cak-" + hex.EncodeToString(b)
}

// Artifact downloads and verifies CONSENSUS.md (see Client.Artifact).
func (a *Agent) Artifact(ctx context.Context, invitationID string) ([]byte, string, error) {
	rec, err := a.State.Load(invitationID)
	if err != nil {
		return nil, "", err
	}
	return a.Client.Artifact(ctx, rec.Actions.Artifact, rec.ParticipantToken)
}
