package httpapi

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/venue"
)

// The parts of llms-full.txt that state what the service does are
// generated from the code that does it: the committed file holds them as
// generated for DocumentOrigin (make generate writes them, a test compares
// them), and each deployment serves them generated again for its own
// origin and capabilities, after the origin is substituted. So the worked
// example's digests are those of the bytes it prints, on every deployment.

// docPart is one generated part of llms-full.txt: where it is and what it
// must say.
type docPart struct {
	name string
	re   *regexp.Regexp
	want string
}

var (
	signingExampleRE = regexp.MustCompile(`(?m)^TEST KEY seed \(hex\): .*\n(?:[A-Za-z -]+(?: \([a-z ]+\))?: .*\n)+`)
	actionsRE        = regexp.MustCompile("`actions` \\(absolute [^)]*\\)")
	notOfferedRE     = regexp.MustCompile(`(?m)^Not offered: .*\n`)
	credentialsRE    = regexp.MustCompile(`(?m)^\| Stage \| Credential \|.*\n(?:\|.*\n)+`)
)

// docParts is every generated part for a deployment at origin whose
// participant routes are uses and whose capabilities document is caps.
func docParts(origin string, uses []routeUse, caps Capabilities) []docPart {
	return []docPart{
		{"the credentials table", credentialsRE, credentialsTable(uses)},
		{"the claim's actions", actionsRE, actionsPhrase()},
		{"what is not offered", notOfferedRE, notOfferedLine(origin, caps)},
		{"the signed decisions example", signingExampleRE, signingExample(origin)},
	}
}

// applyParts replaces every occurrence of each part in doc by what it must
// say; a part that is missing is an error.
func applyParts(doc []byte, parts []docPart) ([]byte, error) {
	for _, p := range parts {
		if !p.re.Match(doc) {
			return nil, fmt.Errorf("llms-full.txt: %s is missing", p.name)
		}
		doc = p.re.ReplaceAllLiteral(doc, []byte(p.want))
	}
	return doc, nil
}

// actionsPhrase names the members of the actions the exchange and the
// claim answer with (venue.Actions), in the order they are written.
func actionsPhrase() string {
	t := reflect.TypeFor[venue.Actions]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return "`actions` (absolute URLs: " + joinWords(quoted(names)) + "; `events` is also the feed)"
}

// notOfferedWords says each notOffered member of the capabilities
// document in words, in the document's order.
var notOfferedWords = map[string]string{
	"a2a":                           "A2A",
	"agent-initiation":              "agent-initiated agreements",
	"email-reply-participation":     "taking part by replying to the invitation email (this deployment reads no reply mailbox: its capabilities document has no `offered.reply`)",
	"self-service-token-revocation": "revoking your own token",
	"runtime-callback":              "callbacks to a runtime URL",
	"independent-timestamps":        "independent timestamps",
	"execution":                     "execution of anything",
}

// notOfferedLine is the "Not offered" paragraph of a deployment at origin:
// its capabilities document's notOffered in words, so the two always
// agree.
func notOfferedLine(origin string, caps Capabilities) string {
	words := make([]string, 0, len(caps.NotOffered))
	for _, n := range caps.NotOffered {
		w, ok := notOfferedWords[n]
		if !ok {
			panic("httpapi: notOffered " + n + " has no words in llms-full.txt")
		}
		words = append(words, w)
	}
	reply := ""
	if !slices.Contains(caps.NotOffered, "email-reply-participation") {
		reply = " This deployment reads replies to the invitation email (see \"Deciding by replying to the email\")."
	}
	return "Not offered: " + joinWords(words) + "." + reply +
		" Signing your decisions with your own Ed25519 key is optional (see \"Signed decisions\" below). The same participant routes are also offered as Model Context Protocol tools (see \"MCP\" below)." +
		" The capabilities document " + origin + "/.well-known/consensus-agent says the same in JSON (`notOffered`, `offered`).\n"
}

// The worked example of "Signed decisions": the RFC 8032 test key (section
// 7.1, TEST 1) and fixed ids.
const (
	exampleSeed        = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
	exampleAgreement   = "3f0c2b9e-8d4a-4e61-9b7c-5a2d1e0f3c4b"
	exampleInvitation  = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	exampleParticipant = "1b2c3d4e-5f60-4718-9a0b-c1d2e3f40516"
	exampleInbox       = "ada@agentmail.to"
	exampleRevision    = "25fdf8253a5bac8250a62e38eb3a6bba01f572bb9cf8208d926c2b5e3a1793d7"
	exampleIdempotency = "agree-0001"
	examplePanic       = "httpapi: the signed decisions example: "
)

// signingExample is the worked example for a deployment at origin, built
// by the code the service checks claims and events with: the
// participant-binding/v2 of a keyed claim, its keyProof, and the
// room-command/v2 of an agree with its signature.
func signingExample(origin string) string {
	seed, err := hex.DecodeString(exampleSeed)
	if err != nil {
		panic(examplePanic + err.Error())
	}
	priv := ed25519.NewKeyFromSeed(seed)
	key := jwk.FromPrivate(priv)
	binding := room.Binding{AgreementID: exampleAgreement, InvitationID: exampleInvitation, ParticipantID: exampleParticipant,
		Inbox: exampleInbox, Revision: 1, RevisionDigest: exampleRevision}.WithKey(fmt.Sprintf(room.BindingV2SchemaFmt, origin), key)
	bindingBytes, bindingDigest, err := canon.DigestOf(binding)
	if err != nil {
		panic(examplePanic + err.Error())
	}
	keyBytes, err := canon.Marshal(key)
	if err != nil {
		panic(examplePanic + err.Error())
	}
	cmd := room.Command{AgreementID: exampleAgreement, InvitationID: exampleInvitation, ParticipantID: exampleParticipant,
		Revision: 1, RevisionDigest: exampleRevision, Action: room.ActionAgree}.Signed(origin, exampleIdempotency)
	cmdBytes, cmdDigest, err := canon.DigestOf(cmd)
	if err != nil {
		panic(examplePanic + err.Error())
	}
	var b strings.Builder
	line := func(k, v string) { b.WriteString(k + ": " + v + "\n") }
	line("TEST KEY seed (hex)", exampleSeed)
	line("publicKey", string(keyBytes))
	line("binding (canonical bytes)", string(bindingBytes))
	line("bindingDigest", bindingDigest)
	line("keyProof", jwk.Sign(priv, bindingBytes))
	line("Idempotency-Key", exampleIdempotency)
	line("command (canonical bytes)", string(cmdBytes))
	line("command digest", cmdDigest)
	line("Consensus-Signature", jwk.Sign(priv, cmdBytes))
	return b.String()
}
