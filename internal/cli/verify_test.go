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
	if code, _ := runCLI("verify", "revision", write(t, "z.json", `{}`)); code != 1 {
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
