package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/cli/command"
)

func verifyCommand(env Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "verify COMMAND",
		Short: "Recompute digests of revisions and artifacts, check records (no server, no credential)",
		Long: `Recompute digests locally, without a server or a credential: the revision and
Markdown digests of an exchange response or room document, and the SHA-256 of a
downloaded CONSENSUS.md against its response headers or an expected digest,
every digest, chain link and signature of a consensus-record/v1, the
signature of a received webhook delivery, and the hash chain of an exported
audit log.

Exit status: 0 verified; 1 a check failed (a mismatch); 2 a usage error; 3 an
input could not be read or parsed, so nothing was checked; 4 (verify record)
nothing failed but nothing was authenticated either: no --keys, so the
service signature was not checked (--allow-unauthenticated accepts that).`,
		Example: `  consensus verify revision exchange.json
  consensus verify artifact CONSENSUS.md --headers artifact.headers
  consensus verify record record.json --artifact CONSENSUS.md --keys keys.json
  consensus verify webhook body.json --keys keys.json --headers delivery.headers
  consensus verify audit audit.jsonl`,
		Args: command.AnyGroupArgs,
		RunE: command.Group,
	}
	revision := &cobra.Command{
		Use:   "revision FILE",
		Short: "Recompute revisionDigest and markdownDigest of a saved exchange or room",
		Long: `Recompute revisionDigest (RFC 8785 canonical JSON of canonicalRevision, SHA-256)
and markdownDigest (SHA-256 of the markdown bytes) of a saved exchange response or
room document, and compare them with the digests it states.`,
		Example: `  consensus verify revision exchange.json
  curl -sS -H "Authorization: Consensus-Participant $TOKEN" "$API/room" > room.json && consensus verify revision room.json`,
		Args: command.Args("FILE"),
		RunE: func(_ *cobra.Command, args []string) error { return verifyRevision(args[0], env) },
	}
	var headers, sha string
	artifact := &cobra.Command{
		Use:   "artifact FILE (--headers FILE | --sha256 HEX)",
		Short: "Check a downloaded CONSENSUS.md against its headers or a digest",
		Long: `Hash the exact bytes of a downloaded CONSENSUS.md and compare them with the
Content-Digest and X-Consensus-SHA256 of the response (a curl --dump-header
file) and/or an expected SHA-256.`,
		Example: `  curl -sS -o CONSENSUS.md -D artifact.headers -H "Authorization: Consensus-Participant $TOKEN" "$API/artifact"
  consensus verify artifact CONSENSUS.md --headers artifact.headers
  consensus verify artifact CONSENSUS.md --sha256 sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08`,
		Args: command.Args("FILE"),
		RunE: func(_ *cobra.Command, args []string) error {
			if headers == "" && sha == "" {
				return command.Usagef("give --headers FILE or --sha256 HEX to compare with")
			}
			return verifyArtifact(args[0], headers, sha, env)
		},
	}
	artifact.Flags().StringVar(&headers, "headers", "", "the response headers saved by curl --dump-header `FILE`")
	artifact.Flags().StringVar(&sha, "sha256", "", "the expected SHA-256, `HEX` with or without sha256:")
	c.AddCommand(revision, artifact, verifyRecordCommand(env), verifyWebhookCommand(env), verifyAuditCommand(env))
	return c
}

// verifyRevision recomputes both digests of an exchange response (or a room
// document's revision object) and compares them with the stated ones.
func verifyRevision(file string, env Env) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return unreadable(err)
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
		return unreadable(fmt.Errorf("%s: not JSON: %w", file, err))
	}
	if doc.Revision != nil && doc.CanonicalRevision == nil {
		doc.CanonicalRevision, doc.Markdown, doc.RevisionDigest, doc.MarkdownDigest = doc.Revision.CanonicalRevision, doc.Revision.Markdown, doc.Revision.RevisionDigest, doc.Revision.MarkdownDigest
	}
	if doc.CanonicalRevision == nil || doc.Markdown == nil {
		return unreadable(fmt.Errorf("%s: no canonicalRevision and markdown (give an exchange response or a room document)", file))
	}
	c, err := canon.Transform(doc.CanonicalRevision)
	if err != nil {
		return unreadable(err)
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
		return unreadable(err)
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
			return unreadable(err)
		}
		digest, sha := headerValue(h, "Content-Digest"), headerValue(h, "X-Consensus-SHA256")
		if digest == "" || sha == "" {
			return unreadable(fmt.Errorf("%s lacks Content-Digest or X-Consensus-SHA256", headersFile))
		}
		checks++
		fmt.Fprintf(env.Stdout, "Content-Digest %s\n", verdict("sha-256=:"+b64+":", digest))
		fmt.Fprintf(env.Stdout, "X-Consensus-SHA256 %s\n", verdict(hex, sha))
		if digest != "sha-256=:"+b64+":" || sha != hex {
			return fmt.Errorf("artifact bytes do not match the response headers")
		}
	}
	if checks == 0 {
		return command.Usagef("give --headers FILE or --sha256 HEX to compare with")
	}
	return nil
}

// unreadable marks an input that could not be read or parsed: nothing was
// checked, which is not a mismatch (exit status 3, not 1).
func unreadable(err error) error {
	return &command.StatusError{Status: command.ExitUnreadable, Err: err}
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
