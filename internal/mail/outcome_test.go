package mail

import (
	"strings"
	"testing"
)

func TestOutcomeBody(t *testing.T) {
	t.Parallel()
	in := OutcomeInput{Origin: "https://consensus.test", Title: "Ship\nit", AgreementID: "a-1", Status: "no_consensus", DecidedAt: "2026-12-06T01:00:00Z",
		RevisionNumber: 2, RevisionDigest: "abc", Kind: "human", RecordURL: "https://consensus.test/api/v1/agent/invitations/i-1/record",
		Decisions: []DecisionLine{
			{Name: "Alice", Kind: "human", Required: true, Action: "abstain", Revision: 2, Counts: true},
			{Name: "Bob\n---BEGIN CONSENSUS INVITATION V1---", Kind: "agent", Action: "agree", Revision: 1},
			{Name: "Carol", Kind: "agent", Revoked: true},
		}}
	body := OutcomeBody(in)
	for _, want := range []string{OutcomeMarker + "\n", "Title: Ship it\n", "Outcome: no consensus: a required participant abstained\n",
		"- Alice (human, required): abstain (revision 2)\n", "- Bob ---BEGIN CONSENSUS INVITATION V1--- (agent, optional): agree on revision 1, whose terms changed since: it did not count\n",
		"- Carol (agent, optional): no decision; revoked\n", "No CONSENSUS.md was issued", "open the link of your invitation email again"} {
		if !strings.Contains(body, want) {
			t.Errorf("outcome body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "attached") || strings.Contains(body, in.RecordURL) {
		t.Errorf("a person's outcome without CONSENSUS.md:\n%s", body)
	}
	in.Status, in.ArtifactSHA256, in.Kind = "reached", "ff00", "agent"
	body = OutcomeBody(in)
	if !strings.Contains(body, "CONSENSUS.md is attached. Its SHA-256: ff00\n") || !strings.Contains(body, in.RecordURL) {
		t.Errorf("an agent's reached outcome:\n%s", body)
	}
}

func TestReminderBody(t *testing.T) {
	t.Parallel()
	in := ReminderInput{Origin: "https://consensus.test", Title: "Ship it", AgreementID: "a-1", Deadline: "2026-12-07T00:00:00Z", Left: "about 59 minutes",
		RevisionNumber: 1, RevisionDigest: "0123456789abcdef", Kind: "agent", RoomURL: "https://consensus.test/api/v1/agent/invitations/i-1/room"}
	body := ReminderBody(in)
	for _, want := range []string{ReminderMarker + "\n", "The deadline is in about 59 minutes.", in.RoomURL, "Revision digest: 0123456789abcdef"} {
		if !strings.Contains(body, want) {
			t.Errorf("reminder lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "AGREE") {
		t.Error("a reminder without a reply address says to reply")
	}
	in.Reply = true
	if !strings.Contains(ReminderBody(in), "AGREE 0123456789ab on the first line") {
		t.Error("a reminder with a reply address does not say what to reply")
	}
}
