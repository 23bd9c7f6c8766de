package consensus_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	consensus "github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/mail"
	"github.com/consensus-md/consensus/internal/room"
)

const origin = consensus.DocumentOrigin

// compileSchemas compiles every embedded schema under its $id, with formats
// asserted, keyed by name ("room/v1"); each file's $id must be its path.
func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	var ids []string
	err := fs.WalkDir(consensus.Schemas, "schemas", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(consensus.Schemas, path)
		if err != nil {
			return err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		id := origin + "/" + strings.TrimSuffix(path, ".json")
		if got, _ := doc.(map[string]any)["$id"].(string); got != id {
			t.Errorf("%s: $id %q, want %q", path, got, id)
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := consensus.CompileSchemas(ids...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*jsonschema.Schema{}
	for id, s := range compiled {
		out[strings.TrimPrefix(id, origin+"/schemas/")] = s
	}
	if len(out) < 4 {
		t.Fatalf("compiled %d schemas, want at least 4", len(out))
	}
	return out
}

// asJSON turns a value the server emits into what a client decodes.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestSchemasAcceptWhatTheServerEmits(t *testing.T) {
	t.Parallel()
	schemas := compileSchemas(t)
	const (
		agreementID   = "3f0c2b9e-8d4a-4e61-9b7c-5a2d1e0f3c4b"
		invitationID  = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
		participantID = "1b2c3d4e-5f60-4718-9a0b-c1d2e3f40516"
	)
	locked, err := room.Lock(room.Revision{
		Schema: origin + "/schemas/agreement/v1", AgreementID: agreementID, Revision: 1,
		Title: "Ship <v2> & test", Objective: "Agree on a release window, Zoë included.", Rules: []string{"Weekdays only"},
		Participants: []room.Participant{{ParticipantID: participantID, DisplayName: "Zoë", Kind: room.KindAgent, Required: true}},
		DecisionRule: room.DecisionRule, Deadline: "2026-12-31T00:00:00Z", LockedAt: "2026-09-01T12:00:00Z", Issuer: origin,
	})
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := jsonschema.UnmarshalJSON(bytes.NewReader(locked.Canonical))
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "https://agent.example.org/consensus"
	binding := room.Binding{
		Schema: origin + "/schemas/participant-binding/v1", Version: 1, AgreementID: agreementID, InvitationID: invitationID,
		ParticipantID: participantID, Inbox: "zoe@agentmail.to", RuntimeEndpoint: &endpoint, Assurance: room.Assurance,
		Revision: 1, RevisionDigest: locked.RevisionDigest,
	}
	noEndpoint := binding
	noEndpoint.RuntimeEndpoint = nil
	command := room.Command{
		Schema: origin + "/schemas/room-command/v1", Version: 1, AgreementID: agreementID, InvitationID: invitationID,
		ParticipantID: participantID, Revision: 1, RevisionDigest: locked.RevisionDigest, Action: "comment", Body: "Fine by me 👍",
	}
	decision := command
	decision.Action, decision.Body = "agree", ""
	envelope := mail.NewEnvelope(mail.InvitationInput{
		Origin: origin, InvitationID: invitationID, AgreementID: agreementID, ParticipantID: participantID, Kind: room.KindAgent,
		DisplayName: "Zoë", Inbox: "zoe@agentmail.to", Title: locked.Revision.Title, Deadline: locked.Revision.Deadline,
		RevisionNumber: 1, RevisionDigest: locked.RevisionDigest, Secret: "csi_" + strings.Repeat("A", 43), EmailProof: strings.Repeat("b", 32),
	})
	// The email carries the credentials in clear; MarshalJSON would redact them.
	wire, err := envelope.WireJSON()
	if err != nil {
		t.Fatal(err)
	}

	good := []struct {
		schema string
		value  any
	}{
		{"agreement/v1", canonical},
		{"participant-binding/v1", asJSON(t, binding)},
		{"participant-binding/v1", asJSON(t, noEndpoint)},
		{"room-command/v1", asJSON(t, command)},
		{"room-command/v1", asJSON(t, decision)},
		{"invitation-email/v1", asJSON(t, json.RawMessage(wire))},
	}
	for _, g := range good {
		if err := schemas[g.schema].Validate(g.value); err != nil {
			t.Errorf("%s rejects what the server emits: %v", g.schema, err)
		}
	}
	if _, d, _ := canon.DigestOf(locked.Revision); d != locked.RevisionDigest {
		t.Errorf("canonical revision digest drifted")
	}

	// And they bite: an extra member, a terminal decision with a body.
	extra := asJSON(t, binding).(map[string]any)
	extra["signed_at"] = "2026-09-01T12:00:00Z"
	badDecision := decision
	badDecision.Body = "yes"
	bad := []struct {
		schema string
		value  any
	}{
		{"participant-binding/v1", extra},
		{"room-command/v1", asJSON(t, badDecision)},
	}
	for _, b := range bad {
		if err := schemas[b.schema].Validate(b.value); err == nil {
			t.Errorf("%s accepts an invalid object", b.schema)
		}
	}
}
