package venue

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// tricky strings: every C0 control, quotes and backslashes, HTML
// characters encoding/json would escape, U+2028/2029, DEL, non-BMP, invalid
// UTF-8 and a lone surrogate's bytes.
func tricky() []string {
	var c0 strings.Builder
	for r := rune(0); r < 0x20; r++ {
		c0.WriteRune(r)
	}
	return []string{"", "plain", c0.String(), `"quoted" \back\slash/`, "<a href='x'>&amp;</a>", "\u2028\u2029\u007f",
		"é ñ 中文 🎉 \U0010FFFF", "\xff\xfe invalid", "\xed\xa0\x80 surrogate", strings.Repeat("ab\"c\n", 800)}
}

func TestCommandDigestIsCanonical(t *testing.T) {
	t.Parallel()
	for _, s := range tricky() {
		checkCommandDigest(t, s, s)
	}
}

func TestChainHashIsCanonical(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{time.Unix(0, 0), time.Date(2026, 9, 6, 12, 0, 0, 123456000, time.UTC), time.Now().Truncate(time.Microsecond)} {
		for _, seq := range []int64{1, 9, 10, 3000, 1 << 40} {
			e := store.Event{CommandDigest: canon.Digest([]byte("c")), CreatedAt: at, PrevHash: canon.ZeroHash, Seq: seq}
			_, want, err := canon.DigestOf(map[string]any{
				"prev": e.PrevHash, "seq": e.Seq, "command_digest": e.CommandDigest, "created_at": canon.FormatTime(e.CreatedAt),
			})
			if err != nil || chainHash(e) != want {
				t.Fatalf("chain hash of %+v: %s, canon.DigestOf %s (%v)", e, chainHash(e), want, err)
			}
		}
	}
}

// FuzzCommandDigest holds commandDigest equal to canon.DigestOf for any
// body and action text.
func FuzzCommandDigest(f *testing.F) {
	for _, s := range tricky() {
		f.Add(s, "comment")
	}
	f.Fuzz(func(t *testing.T, body, action string) {
		checkCommandDigest(t, body, action)
	})
}

func checkCommandDigest(t *testing.T, body, action string) {
	t.Helper()
	c := room.Command{Schema: "https://consensus.test/schemas/room-command/v1", Version: 1, AgreementID: uuid.NewString(),
		InvitationID: uuid.NewString(), ParticipantID: uuid.NewString(), Revision: 7, RevisionDigest: canon.Digest([]byte(body)),
		Action: action, Body: body}
	for _, addressing := range []func(*room.Command){
		func(*room.Command) {},
		func(c *room.Command) { c.To = []string{uuid.NewString()} },
		func(c *room.Command) { c.To = []string{uuid.NewString(), uuid.NewString(), uuid.NewString()} },
		func(c *room.Command) { c.InReplyTo = uuid.NewString() },
	} {
		c := c
		addressing(&c)
		for _, c := range []room.Command{c, c.Signed("https://consensus.test", "key-"+uuid.NewString())} {
			_, want, err := canon.DigestOf(c)
			if err != nil {
				t.Fatal(err)
			}
			if got := commandDigest(c); got != want {
				t.Fatalf("commandDigest(%q, version %d, to %v, in_reply_to %q) = %s, canon.DigestOf %s", body, c.Version, c.To, c.InReplyTo, got, want)
			}
		}
	}
}
