package mcpfacade

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/mod/sumdb/note"

	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/translog"
	"github.com/consensus-md/consensus/internal/venue"
)

// ProofCheck is one check of the proof, as translog.VerifyProof names it.
type ProofCheck struct {
	Check  string `json:"check" jsonschema:"leaf, leaf-matches-record, log-signature or inclusion"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// ProofResult is what fetch_record_proof returns.
type ProofResult struct {
	Proof          map[string]any `json:"proof" jsonschema:"the consensus-log-proof/v1 bundle GET .../record/proof serves, also the embedded resource (application/json) of the result"`
	LeafIndex      int64          `json:"leafIndex"`
	TreeSize       int64          `json:"treeSize" jsonschema:"the number of leaves of the checkpoint the proof is against"`
	LogOrigin      string         `json:"logOrigin" jsonschema:"the checkpoint's origin line: the log's name"`
	LogKey         string         `json:"logKey" jsonschema:"the log's verifier key, as /.well-known/consensus-keys publishes it (member log)"`
	OtherSigners   []string       `json:"otherSigners" jsonschema:"the names on the checkpoint's other signature lines (the witnesses' cosignatures), not checked here: check them with the witnesses' own keys"`
	Checks         []ProofCheck   `json:"checks" jsonschema:"this server's check of the proof against its log key and the record it serves"`
	Verified       bool           `json:"verified" jsonschema:"every check passed; a check by this server, so verify the bundle yourself with keys you trust"`
	RecordSHA256   string         `json:"recordSha256" jsonschema:"the SHA-256 of the record the leaf describes (its digest member)"`
	CheckpointNote string         `json:"checkpoint" jsonschema:"the signed checkpoint, with its cosignature lines"`
}

// fetchRecordProof returns the record's consensus-log-proof/v1 as the REST
// route serves it (the same use case, the same bytes), with this server's
// check of it against its own log key and record.
func (f *facade) fetchRecordProof(ctx context.Context, p *venue.Principal, _ NoInput) *mcp.CallToolResult {
	proof, err := f.o.Venue.RecordProof(ctx, p)
	if err != nil {
		return f.refuse(ctx, err)
	}
	body, err := json.Marshal(proof)
	if err != nil {
		return f.refuse(ctx, fmt.Errorf("mcpfacade: encode the proof: %w", err))
	}
	out := ProofResult{LeafIndex: proof.LeafIndex, LogKey: proof.LogKey, CheckpointNote: proof.Checkpoint, OtherSigners: []string{}, Checks: []ProofCheck{}}
	if err := json.Unmarshal(body, &out.Proof); err != nil {
		return f.refuse(ctx, fmt.Errorf("mcpfacade: decode the proof: %w", err))
	}
	opt := translog.VerifyOptions{}
	if _, vkey, ok := f.o.Venue.LogKey(); ok {
		if v, err := translog.NewVerifier(vkey); err == nil {
			opt.LogKey = v
			out.OtherSigners = otherSigners(proof.Checkpoint, v)
		}
	}
	if rec, err := f.o.Venue.Record(ctx, p); err == nil {
		opt.Record = rec.Body
	}
	res := translog.VerifyProof(proof, opt)
	for _, c := range res.Checks {
		out.Checks = append(out.Checks, ProofCheck{Check: c.Name, OK: c.OK, Detail: c.Detail})
	}
	out.Verified = res.OK()
	out.TreeSize, out.LogOrigin = res.Checkpoint.Size, res.Checkpoint.Origin
	if res.Leaf.Digest != nil {
		out.RecordSHA256 = *res.Leaf.Digest
	}
	var report strings.Builder
	for _, c := range out.Checks {
		state := "ok"
		if !c.OK {
			state = "FAIL " + c.Detail
		}
		fmt.Fprintf(&report, "  %s: %s\n", c.Check, state)
	}
	uri := f.o.Origin + agentroute.PrefixOf(p.Kind) + p.InvitationID.String() + agentroute.RecordProof
	text := fmt.Sprintf("consensus-log-proof/v1: the record (SHA-256 %s) is leaf %d of the transparency log %s, proven against its checkpoint of %d leaves, "+
		"which carries %d other signature lines (%s). This server's check:\n%s"+
		"The bundle is the embedded resource %s (application/json) of this result. To trust only keys you chose, save it and the record "+
		"and run `consensus verify record RECORD.json --keys KEYS.json --proof PROOF.json --witness NAME=KEY` (or `node verify-record.mjs` with the same arguments) "+
		"with KEYS.json saved from %s/.well-known/consensus-keys (its member log is the log's key) and the keys of witnesses you trust, obtained from them. The proof shows that the record you hold is the one the log shows everyone; "+
		"it says nothing about events after the record, and a witness cosignature means that witness saw no conflicting checkpoint.\n",
		out.RecordSHA256, out.LeafIndex, out.LogOrigin, out.TreeSize, len(out.OtherSigners), strings.Join(out.OtherSigners, ", "), report.String(), uri, f.o.Origin)
	r := result(text, out)
	r.Content = append(r.Content, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: "application/json", Text: string(body) + "\n"}})
	return r
}

// otherSigners names the signature lines of the checkpoint other than the
// log's own: the witnesses' cosignatures, unverified here.
func otherSigners(checkpoint string, logKey note.Verifier) []string {
	n, err := note.Open([]byte(checkpoint), note.VerifierList(logKey))
	if err != nil {
		return []string{}
	}
	out := []string{}
	for _, s := range n.UnverifiedSigs {
		out = append(out, s.Name)
	}
	return out
}
