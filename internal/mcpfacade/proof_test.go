package mcpfacade_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/mcpfacade"
	"github.com/consensus-md/consensus/internal/servertest"
	"github.com/consensus-md/consensus/internal/translog"
)

// checkRecordProof: once the record is final, fetch_record_proof is
// proof-not-ready until the log integrates the record, then the bundle the
// REST route serves (as structured content and as an embedded resource),
// with this server's passing check; the bundle verifies with the log key
// of /.well-known/consensus-keys against the record.
func checkRecordProof(t *testing.T, s *servertest.Server, cs *mcp.ClientSession, auth *bearer) {
	t.Helper()
	var res *mcp.CallToolResult
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if res = call(t, cs, "fetch_record_proof", nil); !res.IsError {
			break
		}
		refused(t, "fetch_record_proof before integration", res, "proof-not-ready")
		if time.Now().After(deadline) {
			t.Fatal("fetch_record_proof: not ready after 20 s")
		}
	}
	out := structured[mcpfacade.ProofResult](t, "fetch_record_proof", res)
	if !out.Verified || out.TreeSize <= out.LeafIndex || len(out.Checks) < 3 || out.RecordSHA256 == "" {
		t.Fatalf("fetch_record_proof %+v", out)
	}
	for _, c := range out.Checks {
		if !c.OK {
			t.Fatalf("the server's check %s failed: %s", c.Check, c.Detail)
		}
	}

	room := structured[mcpfacade.RoomResult](t, "read_room", call(t, cs, "read_room", nil))
	base := s.URL + "/api/v1/agent/invitations/" + room.InvitationID
	get := func(url string) []byte {
		req, _ := http.NewRequest("GET", url, nil)
		resp, err := (&http.Client{Transport: auth}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
		}
		return b
	}
	rest, err := translog.ParseProof(get(base + "/record/proof"))
	if err != nil {
		t.Fatal(err)
	}
	var resource *mcp.ResourceContents
	for _, c := range res.Content {
		if r, ok := c.(*mcp.EmbeddedResource); ok {
			resource = r.Resource
		}
	}
	if resource == nil || resource.MIMEType != "application/json" || resource.URI != s.Origin+"/api/v1/agent/invitations/"+room.InvitationID+"/record/proof" {
		t.Fatalf("the embedded resource %+v", resource)
	}
	embedded, err := translog.ParseProof([]byte(resource.Text))
	if err != nil {
		t.Fatal(err)
	}
	leafA, errA := canon.Transform(embedded.Leaf)
	leafB, errB := canon.Transform(rest.Leaf)
	if errA != nil || errB != nil || string(leafA) != string(leafB) || embedded.LeafIndex != rest.LeafIndex || embedded.LogKey != rest.LogKey {
		t.Fatalf("the embedded proof is not the served one: leaf %s, served %s", leafA, leafB)
	}
	if structuredIndex, _ := out.Proof["leafIndex"].(float64); int64(structuredIndex) != rest.LeafIndex || out.LeafIndex != rest.LeafIndex {
		t.Fatalf("structured proof index %v, served %d", out.Proof["leafIndex"], rest.LeafIndex)
	}
	if !strings.Contains(text(res), "consensus verify record") {
		t.Fatalf("the text does not say how to verify:\n%.400s", text(res))
	}

	var keys struct {
		Log struct{ VerifierKey string } `json:"log"`
	}
	if err := json.Unmarshal(get(s.URL+"/.well-known/consensus-keys"), &keys); err != nil {
		t.Fatal(err)
	}
	logKey, err := translog.NewVerifier(keys.Log.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	if r := translog.VerifyProof(embedded, translog.VerifyOptions{LogKey: logKey, Record: get(base + "/record")}); !r.OK() {
		t.Fatalf("the fetched proof does not verify: %v", r.FailedChecks())
	}
}
