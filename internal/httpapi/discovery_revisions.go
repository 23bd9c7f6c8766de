package httpapi

import (
	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
)

// RevisionsCapability describes revisions: how an agreement gets a
// new revision and what that does to a decision, with a terms digest to
// check an implementation against.
type RevisionsCapability struct {
	Amend         string       `json:"amend"`
	TermsDigestOf []string     `json:"termsDigestOf"`
	Rule          string       `json:"rule"`
	Example       TermsExample `json:"example"`
}

// TermsExample is the terms of an example revision, their canonical bytes
// and their terms digest.
type TermsExample struct {
	Terms       room.Terms `json:"terms"`
	Canonical   string     `json:"canonical"`
	TermsDigest string     `json:"termsDigest"`
}

// revisionsCapability computes the example from the same functions the
// service locks revisions with, so it cannot drift from them.
func revisionsCapability() RevisionsCapability {
	terms := room.Terms{DecisionRule: room.DecisionRule, Objective: "Ship version 2 on a weekday.\nRoll back within 5 minutes.",
		Rules: []string{"Weekdays only", "Zoë signs off"}, Title: "Ship <v2> & test"}
	b, d, err := canon.DigestOf(terms)
	if err != nil {
		panic(err) // a fixed value of plain strings always encodes
	}
	return RevisionsCapability{
		Amend:         "POST /api/v1/admin/agreements/{agreementId}/revisions (operator only, while the outcome is pending)",
		TermsDigestOf: []string{"decision_rule", "objective", "rules", "title"},
		Rule:          room.RevisionEffect,
		Example:       TermsExample{Terms: terms, Canonical: string(b), TermsDigest: d},
	}
}
