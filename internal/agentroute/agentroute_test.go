package agentroute_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/consensus-md/consensus"
	"github.com/consensus-md/consensus/internal/agentroute"
)

// TestForSpellsThePublishedURLs pins the layout byte for byte: these URLs are
// in every invitation email already sent and in every agent's state file.
func TestForSpellsThePublishedURLs(t *testing.T) {
	t.Parallel()
	const id = "0b0e7c1e-3f0a-4c55-9a51-2f4f1c1d8e01"
	got := agentroute.For("https://consensus.md", id)
	base := "https://consensus.md/api/v1/agent/invitations/" + id
	want := agentroute.URLs{Exchange: base + "/exchange", Claim: base + "/claim", Room: base + "/room", Events: base + "/events", Artifact: base + "/artifact", Record: base + "/record"}
	if got != want {
		t.Fatalf("For = %+v\nwant %+v", got, want)
	}
	if agentroute.Pattern != "/api/v1/agent/invitations/{invitationId}" {
		t.Fatalf("Pattern = %q", agentroute.Pattern)
	}
	human := agentroute.ForKind("https://consensus.md", agentroute.KindHuman, id)
	hbase := "https://consensus.md/api/v1/human/invitations/" + id
	if hwant := (agentroute.URLs{Exchange: hbase + "/exchange", Claim: hbase + "/claim", Room: hbase + "/room", Events: hbase + "/events", Artifact: hbase + "/artifact", Record: hbase + "/record"}); human != hwant {
		t.Fatalf("ForKind(human) = %+v\nwant %+v", human, hwant)
	}
	if agentroute.HumanPattern != "/api/v1/human/invitations/{invitationId}" || agentroute.ForKind("https://consensus.md", agentroute.KindAgent, id) != want {
		t.Fatalf("HumanPattern = %q, or ForKind(agent) differs from For", agentroute.HumanPattern)
	}
	js, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{`"exchange":`, `"claim":`, `"room":`, `"events":`, `"artifact":`, `"record":`} {
		if !strings.Contains(string(js), name) {
			t.Errorf("JSON %s lacks %s (state files would no longer load)", js, name)
		}
	}
}

// TestLayoutMatchesOpenAPI proves the layout and the published contract name
// the same paths in each family, no more and no fewer.
func TestLayoutMatchesOpenAPI(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{agentroute.KindAgent, agentroute.KindHuman} {
		t.Run(kind, func(t *testing.T) { layoutMatchesOpenAPI(t, kind) })
	}
}

func layoutMatchesOpenAPI(t *testing.T, kind string) {
	t.Parallel()
	var doc struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(consensus.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var published []string
	for p := range doc.Paths {
		if strings.HasPrefix(p, agentroute.PrefixOf(kind)) {
			published = append(published, p)
		}
	}
	u := agentroute.ForKind("", kind, "{"+agentroute.IDParam+"}")
	base := agentroute.PrefixOf(kind) + "{" + agentroute.IDParam + "}"
	// The stream, the webhook and the record's proof are reached through the
	// room's base; they are not actions of the exchange response.
	built := []string{u.Exchange, u.Claim, u.Room, u.Events, u.Artifact, u.Record, base + agentroute.Stream, base + agentroute.Webhook, base + agentroute.RecordProof}
	sort.Strings(published)
	sort.Strings(built)
	if strings.Join(published, " ") != strings.Join(built, " ") {
		t.Fatalf("openapi.json agent paths %v\nlayout builds %v", published, built)
	}
	for _, p := range built {
		if !strings.HasPrefix(p, agentroute.PrefixOf(kind)+"{"+agentroute.IDParam+"}/") {
			t.Errorf("%s is not under Pattern", p)
		}
	}
}
