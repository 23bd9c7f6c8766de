package httpapi

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/consensus-md/consensus/internal/contract"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/venue"
)

// escapeAll writes s as a JSON string with every character a \u escape
// (a surrogate pair above U+FFFF): the longest encoding JSON allows.
func escapeAll(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r > 0xFFFF {
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	b.WriteByte('"')
	return b.String()
}

// longestObject writes an object whose names and string values are all
// fully escaped; values are written as given when they are not strings.
func longestObject(members ...string) string {
	var parts []string
	for i := 0; i+1 < len(members); i += 2 {
		parts = append(parts, escapeAll(members[i])+":"+members[i+1])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

const astral = "😀" // four UTF-8 bytes, a surrogate pair when escaped

// longestInbox is a legal address of room.MaxInbox characters.
var longestInbox = strings.Repeat("l", 64) + "@" + strings.Repeat("d", room.MaxInbox-65-len(".example")) + ".example"

// longestBodies are, per route, the longest encoding of the longest legal
// body: every field at its maximum, every character escaped.
func longestBodies() map[string]struct {
	body  string
	limit bodyLimit
	into  func([]byte) error
} {
	endpoint := "https://agent.example/" + strings.Repeat("p", room.MaxRuntimeEndpoint-len("https://agent.example/"))
	var rules, parts []string
	for i := 0; i < room.MaxRules; i++ {
		rules = append(rules, escapeAll(strings.Repeat(astral, room.MaxRule)))
	}
	for i := 0; i < room.MaxParticipants; i++ {
		parts = append(parts, longestObject("displayName", escapeAll(strings.Repeat(astral, room.MaxDisplayName)), "kind", escapeAll("agent"),
			"email", escapeAll(longestInbox), "required", "false"))
	}
	decodeInto := func(limit bodyLimit, newDst func() any) func([]byte) error {
		return func(b []byte) error { return decodeObject(b, limit, newDst()) }
	}
	type entry = struct {
		body  string
		limit bodyLimit
		into  func([]byte) error
	}
	return map[string]entry{
		"exchange": {longestObject("secret", escapeAll("csi_"+strings.Repeat("s", 43))), limitExchange,
			decodeInto(limitExchange, func() any {
				return &struct {
					Secret *string `json:"secret"`
				}{}
			})},
		"claim": {longestObject("emailProof", escapeAll(strings.Repeat("p", 32)), "inbox", escapeAll(longestInbox), "runtimeEndpoint", escapeAll(endpoint)),
			limitClaim, decodeInto(limitClaim, func() any { return &venue.ClaimInput{} })},
		"events": {longestObject("action", escapeAll("change_request"), "body", escapeAll(strings.Repeat(astral, room.MaxBody)), "revision", "9223372036854775807",
			"digest", escapeAll("sha256:"+strings.Repeat("a", 64))), limitEvents, decodeInto(limitEvents, func() any { return &venue.EventInput{} })},
		"create": {longestObject("title", escapeAll(strings.Repeat(astral, room.MaxTitle)), "objective", escapeAll(strings.Repeat(astral, room.MaxObjective)),
			"rules", "["+strings.Join(rules, ",")+"]", "deadline", escapeAll("2099-12-31T23:59:59+14:00"), "participants", "["+strings.Join(parts, ",")+"]"),
			limitCreate, decodeInto(limitCreate, func() any { return &venue.CreateInput{} })},
		"amend": {longestObject("title", escapeAll(strings.Repeat(astral, room.MaxTitle)), "objective", escapeAll(strings.Repeat(astral, room.MaxObjective)),
			"rules", "["+strings.Join(rules, ",")+"]", "deadline", escapeAll("2099-12-31T23:59:59+14:00"), "participants", "["+strings.Join(parts[1:], ",")+"]"),
			limitCreate, decodeInto(limitCreate, func() any { return &venue.AmendInput{} })},
	}
}

// TestBodyLimitsAdmitLongestLegalBodies: each route
// reads at least the longest encoding of its longest legal body, and
// decodes it; the limit a route states holds for the body's shortest
// form, which for a legal body never exceeds it.
func TestBodyLimitsAdmitLongestLegalBodies(t *testing.T) {
	t.Parallel()
	for route, tc := range longestBodies() {
		if int64(len(tc.body)) > tc.limit.Wire {
			t.Errorf("%s: the longest legal body is %d bytes; the route reads %d", route, len(tc.body), tc.limit.Wire)
			continue
		}
		if err := tc.into([]byte(tc.body)); err != nil {
			t.Errorf("%s: the longest legal body (%d bytes) is refused: %v", route, len(tc.body), err)
		}
		t.Logf("%s: longest legal body %d bytes, read limit %d", route, len(tc.body), tc.limit.Wire)
	}
}

// TestClaimLimitForgivesEscapesOnly: claim states 4,096 bytes (the guide's
// figure). A body that is longer only because its strings use optional
// escapes is read; one longer by its text or its whitespace is 413.
func TestClaimLimitForgivesEscapesOnly(t *testing.T) {
	t.Parallel()
	var dst venue.ClaimInput
	pad := strings.Repeat("p", 4096-len(`{"emailProof":""}`))
	if err := decodeObject([]byte(`{"emailProof":"`+pad+`"}`), limitClaim, &dst); err != nil {
		t.Errorf("a claim body of exactly 4,096 bytes: %v", err)
	}
	if err := decodeObject([]byte(`{"emailProof":`+escapeAll(pad)+`}`), limitClaim, &dst); err != nil {
		t.Errorf("the same body with every character escaped: %v", err)
	}
	for _, body := range []string{`{"emailProof":"` + pad + `p"}`, `{"emailProof":"` + pad + `"} `, `{"emailProof":` + escapeAll(pad+"p") + `}`} {
		if err := decodeObject([]byte(body), limitClaim, &dst); err == nil || err.(*Error).Code != ProblemPayloadTooLarge {
			t.Errorf("a %d-byte claim body counted over 4,096 bytes: %v, want payload-too-large", len(body), err)
		}
	}
}

// TestBodilessRoutesRefuseBodies: revoke and resend take no body; an empty
// object is tolerated, anything else is refused, and a large body is 413
// before it is read.
func TestBodilessRoutesRefuseBodies(t *testing.T) {
	t.Parallel()
	const token = "operator-token-0123456789abcdef"
	var s *Server
	origin, client := ServeContract(t, func(origin string) http.Handler {
		s = New(Options{Origin: origin, Pinger: pingFunc(func(context.Context) error { return nil }), OperatorTokenHash: sha256.Sum256([]byte(token)),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test"})
		return s.Handler()
	})
	for _, path := range []string{"/api/v1/admin/participants/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f/revoke", "/api/v1/admin/invitations/7d3c5a8e-4b1f-4c2d-9e6a-0f1b2c3d4e5f/resend"} {
		for _, tc := range []struct {
			body   string
			status int
			code   string
		}{
			{`{"x":"` + strings.Repeat("a", 10<<20) + `"}`, http.StatusRequestEntityTooLarge, "payload-too-large"},
			{`{"reason":"x"}`, http.StatusBadRequest, "invalid-request"},
			{`[]`, http.StatusBadRequest, "invalid-request"},
		} {
			resp, body := DoRequest(t, client, origin, http.MethodPost, path, []byte(tc.body), contract.SkipRequestHeader, "1", "Authorization", "Bearer "+token)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), `"code":"`+tc.code+`"`) {
				t.Errorf("%s with a %d-byte body: %d %.200s, want %d %s", path, len(tc.body), resp.StatusCode, body, tc.status, tc.code)
			}
		}
	}
}
