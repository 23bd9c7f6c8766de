package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTerminalText: what a terminal would act on is escaped, the rest is
// kept as it is.
func TestTerminalText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain ascii, punctuation: a=b (c) [d] \\ \"", "plain ascii, punctuation: a=b (c) [d] \\ \""},
		{"Zoë, 東京, emoji 🙂, Ελληνικά", "Zoë, 東京, emoji 🙂, Ελληνικά"},
		{"\x1b[2J\x1b[1;31mWIPED\x1b[0m", `\u001b[2J\u001b[1;31mWIPED\u001b[0m`},
		{"bell\a back\b cr\r nul\x00 del\x7f", `bell\u0007 back\u0008 cr\u000d nul\u0000 del\u007f`},
		{"tab\tnewline\n", `tab\u0009newline\u000a`},
		{"c1 \u0085 \u009b31m", `c1 \u0085 \u009b31m`},
		{"\u202edi-tnemeerga", `\u202edi-tnemeerga`},
		{"\u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069 \u200e\u200f \u061c", `\u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069 \u200e\u200f \u061c`},
		{"zero\u200bwidth\u200d join \u2060 \ufeff soft\u00adhyphen", `zero\u200bwidth\u200d join \u2060 \ufeff soft\u00adhyphen`},
		{"line\u2028para\u2029", `line\u2028para\u2029`},
		{"tag \U000E0041 char", `tag \udb40\udc41 char`},
		{"bad \xff byte", `bad \ufffd byte`},
		{"", ""},
	} {
		if got := terminalText(c.in); got != c.want {
			t.Errorf("terminalText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestTerminalTextKeepsJSON: a JSON document through terminalText is still
// JSON and decodes to the same value.
func TestTerminalTextKeepsJSON(t *testing.T) {
	in, _ := json.Marshal(map[string]string{"name": "\u202e\x1b[2J \u0085 \U000E0041 \u2066ok"})
	var a, b any
	if err := json.Unmarshal(in, &a); err != nil {
		t.Fatal(err)
	}
	out := terminalText(string(in))
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if ja, jb := mustJSON(t, a), mustJSON(t, b); ja != jb || strings.ContainsAny(out, "\u202e\u0085\u2066") {
		t.Errorf("through terminalText: %s, want the value of %s with nothing raw", out, in)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTerminalWriter: layout newlines and tabs pass, everything else is
// escaped, and a character split across writes is written whole.
func TestTerminalWriter(t *testing.T) {
	var out bytes.Buffer
	w := &terminalWriter{w: &out}
	s := "a\tb\x1b[0m\n\u202e東\n"
	for i := 0; i < len(s); i++ { // one byte a write
		if _, err := w.Write([]byte{s[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if want := "a\tb\\u001b[0m\n\\u202e東\n"; out.String() != want {
		t.Errorf("%q, want %q", out.String(), want)
	}
}

// hostile is text a service (or whoever wrote into it) could send.
const hostile = "\x1b[2J\x1b[1;31mAUDIT WIPED\x1b[0m\u202edi-tnemeerga"

// TestCommandsEscapeWhatTheyShow: the audit, key and agreement tables and
// a problem's detail show hostile text escaped; the JSON export of the
// audit log keeps the service's exact bytes.
func TestCommandsEscapeWhatTheyShow(t *testing.T) {
	h, _ := json.Marshal(hostile)
	entry := `{"workspaceId":"w","seq":1,"id":"i","at":"2026-01-01T00:00:00.000000Z","actor":{"kind":"key","id":"k","name":` + string(h) +
		`},"action":` + string(h) + `,"targets":{"agreementId":` + string(h) + `},"requestId":"r","clientAddress":"127.0.0.1","result":"ok","prev":"p","hash":"h"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/admin/audit":
			_, _ = io.WriteString(w, `{"entries":[`+entry+`],"nextAfter":null}`)
		case "/api/v1/admin/keys":
			_, _ = io.WriteString(w, `{"keys":[{"id":"k","name":`+string(h)+`,"scopes":["audit:read"],"createdAt":"2026-01-01T00:00:00Z","expiresAt":null,"lastUsedAt":null,"revokedAt":null}]}`)
		case "/api/v1/admin/agreements":
			_, _ = io.WriteString(w, `{"agreements":[{"agreementId":"a","title":`+string(h)+`,"revisionNumber":1,"deadline":"d","createdAt":"c","outcome":{"status":"pending","decidedAt":null,"decidingEventId":null}}],"nextCursor":null}`)
		default:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"title":"Not found","status":404,"code":"not-found","detail":`+string(h)+`}`)
		}
	}))
	defer srv.Close()
	env := map[string]string{"CONSENSUS_URL": srv.URL, "CONSENSUS_OPERATOR_TOKEN": "cso_test-operator-token-0123456789"}
	for _, args := range [][]string{
		{"admin", "audit", "--output", "table"},
		{"admin", "keys", "list", "--output", "table"},
		{"admin", "list", "--output", "table"},
		{"admin", "get", "0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b"},
	} {
		_, out, errOut := run(t, env, "", args...)
		if strings.ContainsAny(out+errOut, "\x1b\u202e") || !strings.Contains(out+errOut, `\u001b[2J\u001b[1;31mAUDIT WIPED\u001b[0m\u202edi-tnemeerga`) {
			t.Errorf("%v: %q %q, want the hostile text escaped", args, out, errOut)
		}
	}
	if code, out, errOut := run(t, env, "", "admin", "audit", "--output", "json"); code != 0 || out != entry+"\n" {
		t.Errorf("the JSON export: %d %q %q, want the service's bytes", code, out, errOut)
	}
}
