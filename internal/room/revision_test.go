package room

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
)

func sampleRevision() Revision {
	return Revision{
		Schema: "https://consensus.md/schemas/agreement/v1", AgreementID: "6a1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d", Revision: 1,
		Title: "Q3 & Q4 <plan> \u2028 launch 🚀", Objective: "Agree on the rollout.\nSecond line.",
		Rules: []string{"No weekend deploys", "Rollback within 5 min"},
		Participants: []Participant{
			{ParticipantID: "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a", DisplayName: "Büyer", Kind: KindAgent, Required: true},
			{ParticipantID: "1d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a", DisplayName: "Observer", Kind: KindHuman, Required: false},
		},
		DecisionRule: DecisionRule, Deadline: "2026-12-31T00:00:00Z", LockedAt: "2026-12-02T16:00:00Z", Issuer: "https://consensus.md",
	}
}

// TestLockMatchesIndependentEncoder: the digest equals the one Python's
// json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
// produced for the same object (vector "revision-like" in canon/testdata).
func TestLockMatchesIndependentEncoder(t *testing.T) {
	t.Parallel()
	l, err := Lock(sampleRevision())
	if err != nil {
		t.Fatal(err)
	}
	const want = "c3aa22854c1fd91dc9355d8c3d80d1926d5c3f72218dace59fe17a86daea76b7"
	if l.RevisionDigest != want {
		t.Fatalf("digest %s want %s\n%s", l.RevisionDigest, want, l.Canonical)
	}
	if l.MarkdownDigest != canon.Digest([]byte(l.Markdown)) {
		t.Fatal("markdown digest")
	}
	again, _ := Lock(sampleRevision())
	if again.Markdown != l.Markdown {
		t.Fatal("markdown is not deterministic")
	}
	for _, want := range []string{"# Q3 & Q4 <plan> launch 🚀", "1. No weekend deploys", "| Büyer | agent | yes |", "Second line."} {
		if !strings.Contains(l.Markdown, want) {
			t.Errorf("markdown lacks %q:\n%s", want, l.Markdown)
		}
	}
}

func TestParseDeadline(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	got, err := ParseDeadline("2026-12-31T02:00:00+02:00", now)
	if err != nil || canon.FormatSeconds(got) != "2026-12-31T00:00:00Z" {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"2026-12-31T00:00:00.5Z", "2026-12-31", "tomorrow", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z", ""} {
		if _, err := ParseDeadline(bad, now); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestValidateRevisionText(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("é", n) }
	ok := []struct {
		title, obj string
		rules      []string
	}{{"t", "o", nil}, {long(200), long(4000), make50(long(1000))}}
	for _, c := range ok {
		if err := ValidateRevisionText(c.title, c.obj, c.rules); err != nil {
			t.Errorf("rejected: %v", err)
		}
	}
	bad := []struct {
		title, obj string
		rules      []string
	}{{"", "o", nil}, {"   ", "o", nil}, {long(201), "o", nil}, {"t", "", nil}, {"t", long(4001), nil}, {"t", "o", []string{""}}, {"t", "o", []string{long(1001)}}, {"t", "o", append(make50("r"), "r")}}
	for _, c := range bad {
		if err := ValidateRevisionText(c.title, c.obj, c.rules); err == nil {
			t.Errorf("accepted title %d obj %d rules %d", len(c.title), len(c.obj), len(c.rules))
		}
	}
}

func make50(s string) []string {
	out := make([]string, 50)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestNormalizeInbox(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{" Agent@Example.COM ": "agent@example.com", "a.b+c@x.io": "a.b+c@x.io"} {
		if got, err := NormalizeInbox("inbox", in); err != nil || got != want {
			t.Errorf("%q -> %q %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "nobody", "A <a@b.c>", "<a@b.c>", "a@b.c, d@e.f", "a b@c.d", strings.Repeat("a", 320) + "@b.c"} {
		if _, err := NormalizeInbox("inbox", bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestValidateRuntimeEndpoint(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"https://agent.example/hook", "https://a.b:8443/x?y=1"} {
		if err := ValidateRuntimeEndpoint(ok); err != nil {
			t.Errorf("rejected %q: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://a.b/", "https://u:p@a.b/", "https:///x", "/relative", "ftp://a.b", "https://a.b/" + strings.Repeat("x", 2048), "mailto:a@b.c", "https://a.b/ x"} {
		if err := ValidateRuntimeEndpoint(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestRenderArtifactStatesTheRecord(t *testing.T) {
	t.Parallel()
	l, _ := Lock(sampleRevision())
	md := RenderArtifact(ArtifactInput{Locked: l, ChainHead: strings.Repeat("c", 64), ChainLength: 3, FinalizedAt: "2026-12-02T17:00:00Z", DecidingID: "ev-2",
		Roster: []ArtifactEntry{{Participant: l.Revision.Participants[0], Decision: ActionAgree, EventID: "ev-2", DecidedAt: "2026-12-02T17:00:00Z"}, {Participant: l.Revision.Participants[1]}}})
	for _, want := range []string{l.RevisionDigest, l.MarkdownDigest, strings.Repeat("c", 64), "https://consensus.md", "2026-12-02T17:00:00Z", "not a signature", "`ev-2`", "| none |"} {
		if !strings.Contains(md, want) {
			t.Errorf("artifact lacks %q", want)
		}
	}
}

// TestSingleLineFields: titles and display names
// refuse every control character and line break (C0, DEL, C1 with NEL,
// U+2028, U+2029) and the bidirectional overrides that reorder what
// follows them; each refusal names the field.
func TestSingleLineFields(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"Eve", "Zoë 🚀 <&> | # ` x", "شريك", "a\u200db"} {
		if err := ValidateLine("title", ok, 1, MaxTitle); err != nil {
			t.Errorf("rejected %q: %v", ok, err)
		}
	}
	for _, bad := range []string{"Eve\nAdmin", "Eve\rAdmin", "Eve\r\nAdmin", "Eve\tAdmin", "Eve\x1b[31m", "Eve\x7f", "Eve\u0085Admin", "Eve\u2028Admin", "Eve\u2029Admin",
		"Eve\u202eevE", "Eve\u2066x\u2069", "a\x00b", "   ", ""} {
		err := ValidateLine("participants[0].displayName", bad, 1, MaxDisplayName)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != "participants[0].displayName" {
			t.Errorf("%q: %v, want a validation error naming the field", bad, err)
		}
	}
	if err := ValidateRevisionText("Line\nbreak", "o", nil); err == nil {
		t.Error("a title with a line break was accepted")
	}
}

// TestMultiLineFields: objectives and rules keep line breaks and tabs but
// refuse other control characters (an escape sequence could rewrite a
// record printed on a terminal).
func TestMultiLineFields(t *testing.T) {
	t.Parallel()
	if err := ValidateRevisionText("t", "First line.\r\nSecond\tline.\n\n## Not a heading", []string{"a\nb"}); err != nil {
		t.Errorf("rejected multi-line text: %v", err)
	}
	for _, bad := range []string{"a\x1b[2Jb", "a\x07", "a\u0085b", "a\x7f"} {
		if err := ValidateRevisionText("t", bad, nil); err == nil {
			t.Errorf("objective %q accepted", bad)
		}
		var ve *ValidationError
		if err := ValidateRevisionText("t", "o", []string{"ok", bad}); !errors.As(err, &ve) || ve.Field != "rules[1]" {
			t.Errorf("rule %q: %v", bad, err)
		}
	}
}

// TestInboxMustBeDeliverable: the transports send
// without SMTPUTF8, so a non-ASCII address (mailbox or domain) is refused
// when it is given, not when its email fails.
func TestInboxMustBeDeliverable(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"josé@agents.example", "agent@bücher.example", "ａgent@agents.example"} {
		if _, err := NormalizeInbox("participants[0].email", bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if got, err := NormalizeInbox("email", "agent@xn--bcher-kva.example"); err != nil || got != "agent@xn--bcher-kva.example" {
		t.Errorf("the ASCII form of an IDN domain: %q %v", got, err)
	}
}
