package record

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consensus-md/consensus/internal/room"
)

// randomAmendedRoom plays a random room as the service would admit it,
// under unanimity or a random quorum: comments, decisions (only by a
// participant whose decision does not count on the current revision), and
// up to three amendments that change the objective (to a new text or back
// to an earlier one) or only move the deadline, some adding a participant
// and some changing the decision rule. It stops when the outcome is final
// or after a random number of steps; a room still pending is issued after
// its deadline, expired.
func randomAmendedRoom(r *rand.Rand, i int) scenario {
	objectives := []string{"", "Agree on Wednesday instead.", "Agree on Thursday instead."}
	sc := scenario{name: fmt.Sprintf("random-%03d", i)}
	for m := range 2 + r.IntN(3) {
		mem := member{name: fmt.Sprintf("P%d", m), kind: room.KindAgent, required: m == 0 || r.IntN(4) > 0}
		if r.IntN(2) == 0 {
			mem.key = fmt.Sprintf("random %d/%d", i, m)
		}
		sc.members = append(sc.members, mem)
	}
	required := 0
	for _, m := range sc.members {
		if m.required {
			required++
		}
	}
	if r.IntN(2) == 0 {
		sc.rule = room.Quorum(1 + r.IntN(required))
	}
	rule := sc.rule
	rev, objective, amendments := 1, 0, 0
	terms := map[int]string{1: objectives[0] + fmt.Sprint(rule)}
	onRoster := len(sc.members)
	deadline := lockedAt.Add(72 * time.Hour)
	var decisions []room.Event
	at := 0
	steps := 4 + r.IntN(36)
	for step := 0; step < steps; step++ {
		at += 60
		now := lockedAt.Add(time.Duration(at) * time.Second)
		switch k := r.IntN(10); {
		case k < 2 && amendments < 3:
			amendments++
			am := &amendment{deadlineMove: day}
			if r.IntN(2) == 0 {
				objective = (objective + 1 + r.IntN(len(objectives)-1)) % len(objectives)
				am = &amendment{objective: objectives[objective]}
				if objective == 0 {
					am.objective = "Agree on Tuesday 10:00 UTC for the release; Zoë runs the rollback drill 🚀."
				}
			} else {
				deadline = deadline.Add(day * time.Second)
			}
			rev++
			if r.IntN(3) == 0 && len(sc.members) < 6 {
				sc.members = append(sc.members, member{name: fmt.Sprintf("P%d", len(sc.members)), kind: room.KindHuman, required: r.IntN(2) == 0, added: rev})
				onRoster = len(sc.members)
				if sc.members[onRoster-1].required {
					required++
				}
			}
			if r.IntN(3) == 0 {
				// unanimity, or a quorum the roster after the amendment allows
				rule = room.Quorum(r.IntN(required + 1))
				am.rule = ptrRule(rule)
			}
			terms[rev] = objectives[objective] + fmt.Sprint(rule)
			sc.acts = append(sc.acts, act{at: at, amend: am})
		case k < 4:
			sc.acts = append(sc.acts, act{r.IntN(onRoster), room.ActionComment, fmt.Sprintf("Step %d.", step), at, nil})
		default:
			who := r.IntN(onRoster)
			pid := fmt.Sprint(who)
			h := room.History{Current: rev, Terms: terms, Events: decisions}
			if st, ok := h.Standings()[pid]; ok && !st.Stale {
				continue
			}
			action := room.ActionAgree
			if k := r.IntN(12); k == 0 {
				action = room.ActionDisagree
			} else if k == 1 {
				action = room.ActionAbstain
			}
			decisions = append(decisions, room.Event{ID: fmt.Sprint(step), Seq: int64(step), ParticipantID: pid, Revision: rev, Action: action, CreatedAt: now})
			sc.acts = append(sc.acts, act{who, action, "", at, nil})
			roster := make([]room.Member, onRoster)
			for m := range roster {
				roster[m] = room.Member{ID: fmt.Sprint(m), Required: sc.members[m].required}
			}
			h = room.History{Current: rev, Terms: terms, Roster: roster, Events: decisions, Deadline: deadline, Rule: rule}
			if h.Outcome(now).Final() {
				sc.issuedAfter = at + 1
				return sc
			}
		}
	}
	sc.issuedAfter = int(deadline.Sub(lockedAt)/time.Second) + 7
	return sc
}

// TestRandomAmendedRoomsVerifyInBoth: records of random amended rooms,
// whose outcome the service's rule (room.History) computed, verify with the
// Go verifier and with the Node verifier, whose restatement of the
// revision rule shares no code with it.
func TestRandomAmendedRoomsVerifyInBoth(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(12, 13))
	dir := t.TempDir()
	keys, _ := json.Marshal(testKeys(serviceKey))
	if err := os.WriteFile(filepath.Join(dir, "keys.jwks.json"), keys, 0o600); err != nil {
		t.Fatal(err)
	}
	man := Manifest{Note: "random amended rooms"}
	statuses, amended, quorum := map[string]int{}, 0, 0
	for i := range 150 {
		sc := randomAmendedRoom(r, i)
		rec, b, artifact := sc.signed(t)
		opt := Options{Keys: testKeys(serviceKey), Artifact: artifact}
		if rep := Verify(b, opt); !rep.OK() || !rep.Authenticated() {
			var out strings.Builder
			_ = rep.Write(&out)
			t.Fatalf("%s: the Go verifier refuses a room the service would record:\n%s", sc.name, out.String())
		}
		statuses[rec.Outcome.Status]++
		if strings.Contains(string(rec.Final().Canonical), `"type":"quorum"`) {
			quorum++
			statuses["quorum "+rec.Outcome.Status]++
		}
		if len(rec.Revisions) > 1 {
			amended++
		}
		v := Vector{Name: sc.name, Record: sc.name + ".json", Keys: "keys.jwks.json", Expect: []string{}}
		if err := os.WriteFile(filepath.Join(dir, v.Record), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if artifact != nil {
			name := sc.name + ".md"
			v.Artifact = &name
			if err := os.WriteFile(filepath.Join(dir, name), artifact, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		man.Vectors = append(man.Vectors, v)
	}
	t.Logf("outcomes %v; %d of 150 rooms amended, %d ending under a quorum", statuses, amended, quorum)
	if len(statuses) < 4 || amended < 50 || quorum < 40 || statuses["quorum reached"] < 10 || statuses["quorum disagreed"] < 3 {
		t.Fatalf("the random rooms do not cover every outcome and enough amendments: %v, %d amended", statuses, amended)
	}
	mb, _ := json.Marshal(man)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), mb, 0o600); err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	out, err := exec.Command(node, "../../tools/verify-record.mjs", "--conformance", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "150 vectors, 0 proof vectors, 0 differ") {
		t.Fatalf("node verifier: %v\n%s", err, out)
	}
}
