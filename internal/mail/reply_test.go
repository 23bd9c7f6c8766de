package mail

import (
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/envelope"
)

func TestComposeReplyTo(t *testing.T) {
	t.Parallel()
	m := &Message{MessageID: "a@b.test", From: "Consensus <c@b.test>", To: "alice@example.test", ReplyTo: ReplyAddress("replies@b.test", "abc234"),
		Subject: "s", Date: time.Unix(0, 0), Body: "hi"}
	b, err := Compose(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\r\nReply-To: replies+abc234@b.test\r\n") {
		t.Fatalf("no Reply-To in\n%s", b)
	}
	m.ReplyTo = "two@b.test, three@b.test"
	if _, err := Compose(m); err == nil {
		t.Fatal("a Reply-To of two addresses was composed")
	}
	m.ReplyTo = ""
	if b, _ := Compose(m); strings.Contains(string(b), "Reply-To") {
		t.Fatal("a Reply-To without a reply address")
	}
}

func TestInvitationBodyWithReply(t *testing.T) {
	t.Parallel()
	env := NewEnvelope(InvitationInput{Origin: "https://consensus.test", InvitationID: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", AgreementID: "3f0c2b9e-8d4a-4e61-9b7c-5a2d1e0f3c4b",
		ParticipantID: "1b2c3d4e-5f60-4718-9a0b-c1d2e3f40516", Kind: "human", DisplayName: "Alice", Inbox: "alice@example.test", Title: "T",
		Deadline: "2026-12-10T00:00:00Z", RevisionNumber: 1, RevisionDigest: strings.Repeat("07fe5fb752be", 5) + "abcd", Secret: "csi_x", EmailProof: "p"})
	body, err := InvitationBodyWithReply(env)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "AGREE 07fe5fb752be on the first line") {
		t.Fatalf("the body does not say what to reply:\n%s", body)
	}
	plain, _ := InvitationBody(env)
	if strings.Contains(plain, "replying") {
		t.Fatal("the body without replies mentions them")
	}
	if blocks, err := envelope.FindBlocks([]byte(body)); err != nil || len(blocks) != 1 {
		t.Fatalf("blocks %d, %v", len(blocks), err)
	}
}

func TestAnswerBodyHoldsNoSecret(t *testing.T) {
	t.Parallel()
	b := AnswerBody(AnswerInput{Origin: "https://consensus.test", Title: "T", Reason: "the deadline has passed.", RevisionNumber: 2, RevisionDigest: strings.Repeat("a", 64)})
	if !strings.Contains(b, "Nothing was recorded: the deadline has passed.") || !strings.Contains(b, "revision is 2") {
		t.Fatalf("answer:\n%s", b)
	}
	if strings.Contains(b, "csi_") || strings.Contains(b, "csp_") || strings.Contains(b, "#secret=") {
		t.Fatal("the answer holds a credential")
	}
}
