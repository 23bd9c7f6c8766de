package record

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/room"
)

const day = 24 * 3600

// scenarios are the valid rooms of the conformance vectors: every outcome,
// keyed and unkeyed participants mixed, an optional participant, a slot
// never claimed, and amended rooms whose decisions on earlier revisions
// count (same terms) or are stale (terms changed).
var scenarios = []scenario{
	{
		name:        "reached-mixed",
		description: "Three participants: a keyed required agent, an unkeyed required human, a keyed optional agent who disagrees (recorded, not deciding). Reached; CONSENSUS.md included.",
		members: []member{
			{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
			{name: "Zoë Müller", kind: room.KindHuman, required: true},
			{name: "Observer | bot", kind: room.KindAgent, required: false, key: "participant observer"},
		},
		acts: []act{
			{0, room.ActionComment, "Tuesday 10:00 UTC works; <rollback> & drills ready.", 60, nil},
			{1, room.ActionQuestion, "Is the drill before or after?\nBefore, I hope 🙂", 120, nil},
			{2, room.ActionDisagree, "", 180, nil},
			{0, room.ActionAgree, "", 240, nil},
			{1, room.ActionAgree, "", 300, nil},
		},
		issuedAfter: 301,
	},
	{
		name:        "reached-signed-v2",
		description: "As reached-mixed, with the keyed participants signing room-command/v2: each signed command holds the Idempotency-Key it was posted under (idempotency_key), so each signature speaks for one event; the human's events stay room-command/v1. Reached; CONSENSUS.md included.",
		members: []member{
			{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
			{name: "Zoë Müller", kind: room.KindHuman, required: true},
			{name: "Observer | bot", kind: room.KindAgent, required: false, key: "participant observer"},
		},
		acts: []act{
			{0, room.ActionComment, "Tuesday 10:00 UTC works; <rollback> & drills ready.", 60, nil},
			{1, room.ActionQuestion, "Is the drill before or after?\nBefore, I hope 🙂", 120, nil},
			{0, room.ActionComment, "Tuesday 10:00 UTC works; <rollback> & drills ready.", 150, nil},
			{2, room.ActionDisagree, "", 180, nil},
			{0, room.ActionAgree, "", 240, nil},
			{1, room.ActionAgree, "", 300, nil},
		},
		issuedAfter: 301,
		v2:          true,
	},
	{
		name:        "disagreed",
		description: "Two keyed required agents; the second disagrees after a change request.",
		members: []member{
			{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
			{name: "Bo (agent)", kind: room.KindAgent, required: true, key: "participant bo"},
		},
		acts: []act{
			{0, room.ActionAgree, "", 60, nil},
			{1, room.ActionChangeRequest, "Move it to Wednesday.", 90, nil},
			{1, room.ActionDisagree, "", 120, nil},
		},
		issuedAfter: 121,
	},
	{
		name:        "no-consensus",
		description: "A keyed agent abstains; the unkeyed one never decides.",
		members: []member{
			{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
			{name: "Cy (agent)", kind: room.KindAgent, required: true},
		},
		acts: []act{
			{1, room.ActionComment, "Thinking.", 30, nil},
			{0, room.ActionAbstain, "", 60, nil},
		},
		issuedAfter: 61,
	},
	{
		name:        "expired",
		description: "The deadline passes with one agreement missing; one slot was never claimed. The record is issued after the deadline.",
		members: []member{
			{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
			{name: "Dee (human)", kind: room.KindHuman, required: true, unclaimed: true},
		},
		acts: []act{
			{0, room.ActionAgree, "", 60, nil},
		},
		issuedAfter: 3*day + 7,
	},
	{
		name:        "reached-unkeyed",
		description: "No participant bound a key: every decision is a server record, and the record still checks the digests, chain and outcome.",
		members: []member{
			{name: "Cy (agent)", kind: room.KindAgent, required: true},
			{name: "Dee (human)", kind: room.KindHuman, required: true},
		},
		acts: []act{
			{0, room.ActionAgree, "", 10, nil},
			{1, room.ActionAgree, "", 20, nil},
		},
		issuedAfter: 21,
	},
	{
		name: "amended-same-terms",
		description: "Revision 2 moves the deadline a day later and adds a required keyed agent; the terms do not change, so Ada's agreement on revision 1 still counts " +
			"and the room is reached on revision 2 without her deciding again.",
		members: []member{
			{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
			{name: "Zoë Müller", kind: room.KindHuman, required: true},
			{name: "Eve (agent)", kind: room.KindAgent, required: true, key: "participant eve", added: 2},
		},
		acts: []act{
			{0, room.ActionAgree, "", 60, nil},
			{1, room.ActionChangeRequest, "Give us one more day, and add Eve.", 90, nil},
			{at: 120, amend: &amendment{deadlineMove: day}},
			{2, room.ActionAgree, "", 180, nil},
			{1, room.ActionAgree, "", 240, nil},
		},
		issuedAfter: 241,
	},
	{
		name: "amended-stale",
		description: "Revision 2 changes the objective, so Ada's agreement on revision 1 is stale and does not count; Bo agrees on revision 2; revision 3 only moves the deadline, " +
			"so Bo's agreement carries over; Ada agrees again on revision 3 and the room is reached.",
		members: []member{
			{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
			{name: "Bo", kind: room.KindHuman, required: true},
		},
		acts: []act{
			{0, room.ActionAgree, "", 60, nil},
			{1, room.ActionChangeRequest, "Wednesday, please: Tuesday is the freeze.", 90, nil},
			{at: 120, amend: &amendment{objective: "Agree on Wednesday 10:00 UTC for the release; Zoë runs the rollback drill 🚀."}},
			{1, room.ActionAgree, "", 180, nil},
			{at: 200, amend: &amendment{deadlineMove: 2 * day}},
			{0, room.ActionAgree, "", 240, nil},
		},
		issuedAfter: 241,
	},
	{
		name: "quorum-reached",
		description: "Decision rule: 2 of the 3 required participants must agree. Ada agrees, an optional observer disagrees (not counted), Zoë agrees: reached " +
			"while the third required participant, who never claimed, is silent. CONSENSUS.md included.",
		rule: room.Quorum(2),
		members: []member{
			{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
			{name: "Zoë Müller", kind: room.KindHuman, required: true},
			{name: "Dee (human)", kind: room.KindHuman, required: true, unclaimed: true},
			{name: "Observer | bot", kind: room.KindAgent, required: false, key: "participant observer"},
		},
		acts: []act{
			{0, room.ActionAgree, "", 60, nil},
			{3, room.ActionDisagree, "", 90, nil},
			{1, room.ActionComment, "Fine by me.", 100, nil},
			{1, room.ActionAgree, "", 120, nil},
		},
		issuedAfter: 121,
	},
	{
		name: "quorum-disagreed",
		description: "Decision rule: 2 of the 3 required participants must agree. Ada disagrees, then Bo abstains: an abstention can never become an agreement, " +
			"so only Cy could still agree and 2 agreements are out of reach; disagreed by Bo's abstention while Cy is silent.",
		rule: room.Quorum(2),
		members: []member{
			{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
			{name: "Bo (agent)", kind: room.KindAgent, required: true, key: "participant bo"},
			{name: "Cy (agent)", kind: room.KindAgent, required: true},
		},
		acts: []act{
			{0, room.ActionDisagree, "", 60, nil},
			{1, room.ActionAbstain, "", 120, nil},
		},
		issuedAfter: 121,
	},
	{
		name:        "quorum-expired",
		description: "Decision rule: 2 of the 3 required participants must agree. Only Ada agrees before the deadline; the record is issued after it.",
		rule:        room.Quorum(2),
		members: []member{
			{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
			{name: "Bo (agent)", kind: room.KindAgent, required: true, key: "participant bo"},
			{name: "Dee (human)", kind: room.KindHuman, required: true, unclaimed: true},
		},
		acts: []act{
			{0, room.ActionAgree, "", 60, nil},
			{1, room.ActionComment, "Still reading.", 90, nil},
		},
		issuedAfter: 3*day + 7,
	},
	{
		name: "quorum-rule-amended",
		description: "Revision 1 asks all 3 required participants to agree; Ada and Bo agree. Revision 2 changes only the decision rule, to 2 of the 3: " +
			"the rule is part of the terms, so both agreements are stale. Ada agrees again and Cy agrees on revision 2: reached, with Bo's stale agreement not counted.",
		members: []member{
			{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
			{name: "Bo", kind: room.KindHuman, required: true},
			{name: "Cy (agent)", kind: room.KindAgent, required: true, key: "participant cy"},
		},
		acts: []act{
			{0, room.ActionAgree, "", 60, nil},
			{1, room.ActionAgree, "", 70, nil},
			{2, room.ActionChangeRequest, "Two of us should be enough.", 90, nil},
			{at: 120, amend: &amendment{rule: ptrRule(room.Quorum(2))}},
			{0, room.ActionAgree, "", 180, nil},
			{2, room.ActionAgree, "", 240, nil},
		},
		issuedAfter: 241,
	},
}

func ptrRule(r room.Rule) *room.Rule { return &r }

// TestQuorumAboveRosterFails: a record whose revision asks for a larger
// quorum than it has required participants fails the revision check in
// both verifiers, even when everything else recomputes.
func TestQuorumAboveRosterFails(t *testing.T) {
	t.Parallel()
	sc := scenarios[len(scenarios)-2] // quorum-expired: 3 required participants
	if sc.name != "quorum-expired" {
		t.Fatalf("scenario %s", sc.name)
	}
	sc.name, sc.rule, sc.acts = "quorum-above-roster", room.Quorum(4), sc.acts[:1]
	_, b, _ := sc.signed(t)
	keys, _ := json.Marshal(testKeys(serviceKey))
	set, err := jwk.ParseSet(keys)
	if err != nil {
		t.Fatal(err)
	}
	rep := Verify(b, Options{Keys: &set})
	if got := rep.FailedChecks(); !slices.Equal(got, []string{CheckRevision}) {
		t.Fatalf("Go verifier failed %v, want [revision]", got)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("this test runs the Node verifier too and needs Node.js 20+")
	}
	dir := t.TempDir()
	rec, jwks := filepath.Join(dir, "record.json"), filepath.Join(dir, "keys.json")
	if os.WriteFile(rec, b, 0o600) != nil || os.WriteFile(jwks, keys, 0o600) != nil {
		t.Fatal("cannot write the record")
	}
	out, _ := exec.Command(node, "../../tools/verify-record.mjs", rec, "--keys", jwks).CombinedOutput()
	if !strings.Contains(string(out), "RESULT: FAILED (revision)\n") || !strings.Contains(string(out), "quorum of 4 is more than its 3 required participants") {
		t.Fatalf("Node verifier:\n%s", out)
	}
}
