package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/consensus-md/consensus/internal/canon"
)

func runVerify(args []string, env Env) error {
	if len(args) < 2 {
		return &usageError{"verify needs revision FILE or artifact FILE"}
	}
	switch args[0] {
	case "revision":
		if len(args) != 2 {
			return &usageError{"verify revision takes one file"}
		}
		return verifyRevision(args[1], env)
	case "artifact":
		headers, rest, err := flagValue(args[1:], "--headers")
		if err != nil {
			return err
		}
		want, rest, err := flagValue(rest, "--sha256")
		if err != nil {
			return err
		}
		if len(rest) != 1 {
			return &usageError{"verify artifact takes one file"}
		}
		return verifyArtifact(rest[0], headers, want, env)
	default:
		return &usageError{fmt.Sprintf("unknown verify subcommand %q", args[0])}
	}
}

// verifyRevision recomputes both digests of an exchange response (or a room
// document's revision object) and compares them with the stated ones.
func verifyRevision(file string, env Env) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var doc struct {
		CanonicalRevision json.RawMessage `json:"canonicalRevision"`
		Markdown          *string         `json:"markdown"`
		RevisionDigest    string          `json:"revisionDigest"`
		MarkdownDigest    string          `json:"markdownDigest"`
		Revision          *struct {
			CanonicalRevision json.RawMessage `json:"canonicalRevision"`
			Markdown          *string         `json:"markdown"`
			RevisionDigest    string          `json:"revisionDigest"`
			MarkdownDigest    string          `json:"markdownDigest"`
		} `json:"revision"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: not JSON: %w", file, err)
	}
	if doc.Revision != nil && doc.CanonicalRevision == nil {
		doc.CanonicalRevision, doc.Markdown, doc.RevisionDigest, doc.MarkdownDigest = doc.Revision.CanonicalRevision, doc.Revision.Markdown, doc.Revision.RevisionDigest, doc.Revision.MarkdownDigest
	}
	if doc.CanonicalRevision == nil || doc.Markdown == nil {
		return fmt.Errorf("%s: no canonicalRevision and markdown (give an exchange response or a room document)", file)
	}
	c, err := canon.Transform(doc.CanonicalRevision)
	if err != nil {
		return err
	}
	rev, md := canon.Digest(c), canon.Digest([]byte(*doc.Markdown))
	fmt.Fprintf(env.Stdout, "revisionDigest %s %s\n", rev, verdict(rev, doc.RevisionDigest))
	fmt.Fprintf(env.Stdout, "markdownDigest %s %s\n", md, verdict(md, doc.MarkdownDigest))
	if rev != doc.RevisionDigest || md != doc.MarkdownDigest {
		return fmt.Errorf("digest mismatch: the document does not match the digests it states")
	}
	return nil
}

func verdict(got, stated string) string {
	if got == stated {
		return "ok"
	}
	return "MISMATCH (stated " + stated + ")"
}

// verifyArtifact hashes the exact bytes of a downloaded CONSENSUS.md and
// compares them with Content-Digest and X-Consensus-SHA256 from a curl
// --dump-header file and/or an expected hex digest.
func verifyArtifact(file, headersFile, want string, env Env) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	hex := canon.Digest(b)
	b64 := canon.DigestBase64(b)
	fmt.Fprintf(env.Stdout, "sha256 %s\n", hex)
	checks := 0
	if want != "" {
		checks++
		fmt.Fprintf(env.Stdout, "expected sha256 %s\n", verdict(hex, strings.TrimPrefix(want, "sha256:")))
		if hex != strings.TrimPrefix(want, "sha256:") {
			return fmt.Errorf("artifact bytes do not match the expected digest")
		}
	}
	if headersFile != "" {
		h, err := os.ReadFile(headersFile)
		if err != nil {
			return err
		}
		digest, sha := headerValue(h, "Content-Digest"), headerValue(h, "X-Consensus-SHA256")
		if digest == "" || sha == "" {
			return fmt.Errorf("%s lacks Content-Digest or X-Consensus-SHA256", headersFile)
		}
		checks++
		fmt.Fprintf(env.Stdout, "Content-Digest %s\n", verdict("sha-256=:"+b64+":", digest))
		fmt.Fprintf(env.Stdout, "X-Consensus-SHA256 %s\n", verdict(hex, sha))
		if digest != "sha-256=:"+b64+":" || sha != hex {
			return fmt.Errorf("artifact bytes do not match the response headers")
		}
	}
	if checks == 0 {
		return &usageError{"verify artifact needs --headers FILE or --sha256 HEX to compare with"}
	}
	return nil
}

func headerValue(raw []byte, name string) string {
	var v string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		k, val, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), name) {
			v = strings.TrimSpace(val) // the last response's value wins (curl -L)
		}
	}
	return v
}
