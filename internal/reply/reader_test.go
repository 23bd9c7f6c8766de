package reply_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/pgtest"
	"github.com/consensus-md/consensus/internal/reply"
	"github.com/consensus-md/consensus/internal/reply/replytest"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/workspace"
)

// fixture is one agreement with a person invited at alice@example.test.
type fixture struct {
	v       *venue.Venue
	keys    *secret.Keys
	reader  *reply.Reader
	created *venue.Created
	inv     uuid.UUID
	now     time.Time
	mu      sync.Mutex
	rsaKey  *rsa.PrivateKey
	edKey   ed25519.PrivateKey
	other   *rsa.PrivateKey
}

const replyAddress = "replies@consensus.test"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st := pgtest.Store(t)
	keys, err := secret.DeriveKeys(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{keys: keys, now: time.Now().UTC()}
	f.v = &venue.Venue{Store: st, Keys: keys, Origin: "https://consensus.test", ReplyAddress: replyAddress, Now: func() time.Time {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.now
	}}
	yes := true
	f.created, err = f.v.CreateAgreement(context.Background(), venue.OperatorCall{Principal: workspace.Bootstrap()}, venue.CreateInput{
		Title: "Ship it", Objective: "Decide whether to ship.", Deadline: f.now.Add(time.Hour).Format(time.RFC3339),
		Participants: []venue.ParticipantInput{
			{DisplayName: "Alice", Kind: "human", Email: "alice@example.test", Required: &yes},
			{DisplayName: "Bob", Kind: "human", Email: "bob@example.test", Required: &yes},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.inv = uuid.MustParse(f.created.Participants[0].InvitationID)
	f.rsaKey, _ = rsa.GenerateKey(rand.Reader, 2048)
	f.other, _ = rsa.GenerateKey(rand.Reader, 2048)
	_, f.edKey, _ = ed25519.GenerateKey(rand.Reader)
	addr := replytest.DNS(t, map[string]string{
		"s1._domainkey.example.test":      replytest.KeyRecord(t, f.rsaKey.Public()),
		"ed._domainkey.mail.example.test": replytest.KeyRecord(t, f.edKey.Public()),
		"s1._domainkey.elsewhere.test":    replytest.KeyRecord(t, f.other.Public()),
	})
	f.reader = &reply.Reader{Venue: f.v, Store: st, Keys: keys, Address: replyAddress, Lookup: reply.Resolver(addr),
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), Poll: 200 * time.Millisecond}
	return f
}

// message builds a reply to the invitation from from, with extra header
// lines and a body already encoded as contentType and cte say.
func (f *fixture) message(from, id, extra, contentType, cte, body string) []byte {
	to := strings.Replace(replyAddress, "@", "+"+f.keys.ReplyTag(f.inv)+"@", 1)
	var b strings.Builder
	fmt.Fprintf(&b, "From: Alice <%s>\r\nTo: %s\r\nSubject: Re: CONSENSUS.md: invitation: Ship it\r\nMessage-ID: <%s@example.test>\r\nDate: %s\r\n%sMIME-Version: 1.0\r\nContent-Type: %s\r\nContent-Transfer-Encoding: %s\r\n\r\n",
		from, to, id, time.Now().Format(time.RFC1123Z), extra, contentType, cte)
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n"))
	return []byte(b.String())
}

func signWith(t *testing.T, raw []byte, domain, selector string, key crypto.Signer) []byte {
	return replytest.Sign(t, raw, domain, selector, key)
}
