package cli

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/webhook"
)

func runCLI(args ...string) (int, string) {
	var out bytes.Buffer
	code := Main(args, Env{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }})
	return code, out.String()
}

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVerifyRevision(t *testing.T) {
	t.Parallel()
	rev := `{"title":"Q & <A>","revision":1}`
	c, _ := canon.Transform([]byte(rev))
	md := "# Q & <A>\n"
	good := `{"canonicalRevision":` + rev + `,"markdown":"# Q & <A>\n","revisionDigest":"` + canon.Digest(c) + `","markdownDigest":"` + canon.Digest([]byte(md)) + `"}`
	if code, out := runCLI("verify", "revision", write(t, "x.json", good)); code != 0 || strings.Count(out, " ok") != 2 {
		t.Fatalf("good document: %d %s", code, out)
	}
	room := `{"revision":{"canonicalRevision":` + rev + `,"markdown":"# Q & <A>\n","revisionDigest":"` + canon.Digest(c) + `","markdownDigest":"` + canon.Digest([]byte(md)) + `"}}`
	if code, out := runCLI("verify", "revision", write(t, "room.json", room)); code != 0 {
		t.Fatalf("room document: %d %s", code, out)
	}
	tampered := strings.Replace(good, `"revision":1`, `"revision":2`, 1)
	if code, out := runCLI("verify", "revision", write(t, "y.json", tampered)); code != 1 || !strings.Contains(out, "MISMATCH") {
		t.Fatalf("tampered document: %d %s", code, out)
	}
	if code, _ := runCLI("verify", "revision", write(t, "z.json", `{}`)); code != 3 {
		t.Fatal("empty document accepted")
	}
}

func TestVerifyArtifact(t *testing.T) {
	t.Parallel()
	body := "# CONSENSUS.md: x\n"
	file := write(t, "CONSENSUS.md", body)
	headers := "HTTP/1.1 200 OK\r\nContent-Digest: sha-256=:" + canon.DigestBase64([]byte(body)) + ":\r\nX-Consensus-SHA256: " + canon.Digest([]byte(body)) + "\r\n\r\n"
	if code, out := runCLI("verify", "artifact", file, "--headers", write(t, "h", headers)); code != 0 {
		t.Fatalf("good artifact: %d %s", code, out)
	}
	if code, out := runCLI("verify", "artifact", file, "--sha256", "sha256:"+canon.Digest([]byte(body))); code != 0 {
		t.Fatalf("expected digest: %d %s", code, out)
	}
	if code, _ := runCLI("verify", "artifact", write(t, "other.md", body+" "), "--headers", write(t, "h2", headers)); code != 1 {
		t.Fatal("changed bytes accepted")
	}
	if code, _ := runCLI("verify", "artifact", file); code != 2 {
		t.Fatal("nothing to compare with is a usage error")
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"nope"}, {"admin"}, {"verify", "x", "y"}} {
		if code, out := runCLI(args...); code != 2 || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: %d %s", args, code, out)
		}
	}
}

func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	set, _ := json.Marshal(jwk.Set{Keys: []jwk.Published{jwk.Publish(pub)}})
	keys := write(t, "keys.json", string(set))
	body := `{"type":"room.event","agreementId":"a","invitationId":"i","seq":3,"outcome":"pending"}`
	ts := time.Now().Unix()
	sig := webhook.Sign(priv, "0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b", ts, []byte(body))
	headers := write(t, "h.txt", "Content-Type: application/json\nWebhook-Id: 0190a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b\nwebhook-timestamp: "+strconv.FormatInt(ts, 10)+"\nwebhook-signature: "+sig+"\n")
	if code, out := runCLI("verify", "webhook", write(t, "b.json", body), "--keys", keys, "--headers", headers); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("good delivery: %d %s", code, out)
	}
	if code, out := runCLI("verify", "webhook", write(t, "b.json", body+" "), "--keys", keys, "--headers", headers); code != 1 || !strings.Contains(out, "FAIL") {
		t.Fatalf("changed body: %d %s", code, out)
	}
	if code, _ := runCLI("verify", "webhook", write(t, "b.json", body), "--headers", headers); code == 0 {
		t.Fatal("no --keys accepted")
	}
}

// TestVerifyExitCodes: 1 a check failed, 2 a usage error, 3 an input that
// could not be read (nothing was checked), 4 a consistent record that
// nothing authenticated (no --keys) unless --allow-unauthenticated.
func TestVerifyExitCodes(t *testing.T) {
	t.Parallel()
	const vectors = "../../conformance/records/"
	missing := filepath.Join(t.TempDir(), "missing.json")
	for _, tc := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"record verified", []string{"verify", "record", vectors + "reached-unkeyed.record.json", "--keys", vectors + "keys.jwks.json"}, 0, "VERIFIED"},
		{"record without keys", []string{"verify", "record", vectors + "reached-unkeyed.record.json"}, 4, "nothing was authenticated"},
		{"record without keys, allowed", []string{"verify", "record", vectors + "reached-unkeyed.record.json", "--allow-unauthenticated"}, 0, "NOT AUTHENTICATED"},
		{"record tampered", []string{"verify", "record", vectors + "changed-body.record.json", "--keys", vectors + "keys.jwks.json"}, 1, "does not verify"},
		{"record missing", []string{"verify", "record", missing, "--keys", vectors + "keys.jwks.json"}, 3, "no such file"},
		{"keys missing", []string{"verify", "record", vectors + "reached-unkeyed.record.json", "--keys", missing}, 3, "no such file"},
		{"revision missing", []string{"verify", "revision", missing}, 3, "no such file"},
		{"artifact missing", []string{"verify", "artifact", missing, "--sha256", strings.Repeat("0", 64)}, 3, "no such file"},
		{"webhook keys missing", []string{"verify", "webhook", missing, "--keys", missing}, 3, "no such file"},
		{"usage", []string{"verify", "record"}, 2, "missing RECORD.json"},
	} {
		code, out := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.says) {
			t.Errorf("%s: exit %d, want %d saying %q:\n%s", tc.name, code, tc.code, tc.says, out)
		}
	}
}
