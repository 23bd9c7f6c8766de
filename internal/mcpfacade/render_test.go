package mcpfacade

import (
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/venue"
)

// TestRenderRuleQuorum: read_room's text states a quorum rule in words,
// how many agreements count and how many more are needed while pending.
func TestRenderRuleQuorum(t *testing.T) {
	t.Parallel()
	r := RoomResult{Outcome: venue.OutcomeView{Status: "pending"}, DecisionRule: venue.RuleView{Type: "quorum", Agree: 2, RequiredParticipants: 3,
		Statement: "2 of the 3 required participants must agree", Agreed: 1, AgreementsNeeded: 1}}
	want := "Decision rule: 2 of the 3 required participants must agree (quorum). Agreements that count: 1 of 2; 1 more is needed, from a participant listed under Blocking.\n"
	if got := renderRule(r); got != want {
		t.Fatalf("pending:\n%q\nwant\n%q", got, want)
	}
	r.Outcome.Status, r.DecisionRule.Agreed, r.DecisionRule.AgreementsNeeded = "reached", 2, 0
	if got := renderRule(r); got != "Decision rule: 2 of the 3 required participants must agree (quorum). Agreements that count: 2 of 2.\n" {
		t.Fatalf("reached: %q", got)
	}
	if !strings.Contains(renderRoom(r), "Decision rule: 2 of the 3") {
		t.Fatal("renderRoom leaves the rule out")
	}
}
