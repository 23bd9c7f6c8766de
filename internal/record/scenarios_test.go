package record

import "github.com/consensus-md/consensus/internal/room"

const day = 24 * 3600

// scenarios are the valid rooms of the conformance vectors: every outcome,
// keyed and unkeyed participants mixed, an optional participant, a slot
// never claimed.
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
			{0, room.ActionComment, "Tuesday 10:00 UTC works; <rollback> & drills ready.", 60},
			{1, room.ActionQuestion, "Is the drill before or after?\nBefore, I hope 🙂", 120},
			{2, room.ActionDisagree, "", 180},
			{0, room.ActionAgree, "", 240},
			{1, room.ActionAgree, "", 300},
		},
		issuedAfter: 301,
	},
	{
		name:        "disagreed",
		description: "Two keyed required agents; the second disagrees after a change request.",
		members: []member{
			{name: "Ada (agent)", kind: room.KindAgent, required: true, key: "participant ada"},
			{name: "Bo (agent)", kind: room.KindAgent, required: true, key: "participant bo"},
		},
		acts: []act{
			{0, room.ActionAgree, "", 60},
			{1, room.ActionChangeRequest, "Move it to Wednesday.", 90},
			{1, room.ActionDisagree, "", 120},
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
			{1, room.ActionComment, "Thinking.", 30},
			{0, room.ActionAbstain, "", 60},
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
			{0, room.ActionAgree, "", 60},
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
			{0, room.ActionAgree, "", 10},
			{1, room.ActionAgree, "", 20},
		},
		issuedAfter: 21,
	},
}
