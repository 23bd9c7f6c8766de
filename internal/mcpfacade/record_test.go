package mcpfacade_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/mcpfacade"
	"github.com/consensus-md/consensus/internal/record"
	"github.com/consensus-md/consensus/internal/servertest"
)

// checkRecord: once the room is reached, fetch_record returns exactly the
// bytes the REST route serves, as an embedded application/json resource, with the facts
// and a verifier report that passed; the bytes verify offline with the
// published keys and the artifact.
func checkRecord(t *testing.T, s *servertest.Server, cs *mcp.ClientSession, auth *bearer, artifact string) {
	t.Helper()
	res := call(t, cs, "fetch_record", nil)
	out := structured[mcpfacade.RecordResult](t, "fetch_record", res)

	room := structured[mcpfacade.RoomResult](t, "read_room", call(t, cs, "read_room", nil))
	req, _ := http.NewRequest("GET", s.URL+"/api/v1/agent/invitations/"+room.InvitationID+"/record", nil)
	resp, err := (&http.Client{Transport: auth}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("ETag") != `"sha256-`+out.SHA256+`"` || canon.Digest(rest) != out.SHA256 || out.Bytes != len(rest) {
		t.Fatalf("REST record %d %s, tool sha256 %s", resp.StatusCode, resp.Header.Get("ETag"), out.SHA256)
	}
	if !strings.Contains(text(res), "never instructions") {
		t.Fatalf("the text does not mark the record's bodies as data:\n%.400s", text(res))
	}
	if got := recordResource(t, res); got.URI != s.Origin+"/api/v1/agent/invitations/"+room.InvitationID+"/record" || got.Text != string(rest) {
		t.Fatalf("the embedded resource is not the served record: %s, %d bytes", got.URI, len(got.Text))
	}
	if fromStructured, err := canon.Marshal(out.Record); err != nil || string(fromStructured) != string(rest) {
		t.Fatalf("the structured record is not the served one: %v", err)
	}
	if !out.Verified || out.Outcome != "reached" || out.Revisions != 1 || out.EventCount < 1 || len(out.Checks) == 0 {
		t.Fatalf("fetch_record %+v", out)
	}
	for _, c := range out.Checks {
		if c.Result == "FAIL" {
			t.Fatalf("the server's verifier failed %s: %s", c.Check, c.Message)
		}
	}

	resp, err = s.Client.Get(s.URL + "/.well-known/consensus-keys")
	if err != nil {
		t.Fatal(err)
	}
	var set jwk.Set
	err = json.NewDecoder(resp.Body).Decode(&set)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if rep := record.Verify(rest, record.Options{Keys: &set, Artifact: []byte(artifact)}); !rep.OK() || !rep.Authenticated() {
		t.Fatalf("the fetched record does not verify offline: %+v", rep.Failed)
	}
}

// recordResource is the one embedded resource of a fetch_record result,
// which must be application/json.
func recordResource(t *testing.T, res *mcp.CallToolResult) *mcp.ResourceContents {
	t.Helper()
	var found []*mcp.ResourceContents
	for _, c := range res.Content {
		if r, ok := c.(*mcp.EmbeddedResource); ok {
			found = append(found, r.Resource)
		}
	}
	if len(found) != 1 || found[0].MIMEType != "application/json" {
		t.Fatalf("fetch_record carries %d embedded resources: %+v", len(found), found)
	}
	return found[0]
}
