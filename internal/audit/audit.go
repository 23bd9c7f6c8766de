// Package audit defines an operator audit entry as the API and an export
// show it, the hash that chains the entries of one workspace, and the check
// of an exported chain. It is pure: no I/O.
//
// Each entry's hash is the SHA-256, in lowercase hex, of the RFC 8785
// canonical JSON of the entry without its hash member; prev is the hash of
// the entry before it in the workspace (64 zeros for the first), and seq
// counts from 1. Changing, dropping, reordering or inserting an entry
// breaks every hash after it.
package audit

import (
	"errors"
	"fmt"

	"github.com/consensus-md/consensus/internal/canon"
)

// Actor is who acted: kind is bootstrap, key, operator or cli; id the
// key's or operator's id (empty for the others); name what a person reads.
type Actor struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Entry is one audit entry. Targets maps a kind of id (agreementId,
// participantId, invitationId, keyId, operatorId) to the id the action
// named; Result is "ok" or the problem code the request was answered with.
type Entry struct {
	WorkspaceID   string            `json:"workspaceId"`
	Seq           int64             `json:"seq"`
	ID            string            `json:"id"`
	At            string            `json:"at"`
	Actor         Actor             `json:"actor"`
	Action        string            `json:"action"`
	Targets       map[string]string `json:"targets"`
	RequestID     string            `json:"requestId"`
	ClientAddress string            `json:"clientAddress"`
	Result        string            `json:"result"`
	Prev          string            `json:"prev"`
	Hash          string            `json:"hash"`
}

// hashed is an Entry without its hash: what the hash covers.
type hashed struct {
	WorkspaceID   string            `json:"workspaceId"`
	Seq           int64             `json:"seq"`
	ID            string            `json:"id"`
	At            string            `json:"at"`
	Actor         Actor             `json:"actor"`
	Action        string            `json:"action"`
	Targets       map[string]string `json:"targets"`
	RequestID     string            `json:"requestId"`
	ClientAddress string            `json:"clientAddress"`
	Result        string            `json:"result"`
	Prev          string            `json:"prev"`
}

// Hash returns the hash e must carry: the digest of its canonical JSON
// without the hash member.
func Hash(e Entry) (string, error) {
	targets := e.Targets
	if targets == nil {
		targets = map[string]string{}
	}
	_, d, err := canon.DigestOf(hashed{WorkspaceID: e.WorkspaceID, Seq: e.Seq, ID: e.ID, At: e.At, Actor: e.Actor, Action: e.Action,
		Targets: targets, RequestID: e.RequestID, ClientAddress: e.ClientAddress, Result: e.Result, Prev: e.Prev})
	if err != nil {
		return "", fmt.Errorf("audit: hash: %w", err)
	}
	return d, nil
}

// ErrBroken: an exported chain does not verify.
var ErrBroken = errors.New("audit chain does not verify")

// Verify checks entries, one workspace's in order from its first entry
// (seq 1) or from any entry whose prev is taken on trust: the same
// workspace throughout, consecutive seq, each prev the hash before it, and
// each hash recomputed. The error wraps ErrBroken and names the first entry
// that fails. It returns the hash of the last entry, the head to compare
// with what the service reports.
func Verify(entries []Entry) (head string, err error) {
	for i, e := range entries {
		if i > 0 {
			p := entries[i-1]
			switch {
			case e.WorkspaceID != p.WorkspaceID:
				return "", fmt.Errorf("%w: entry %d belongs to workspace %s, the chain to %s", ErrBroken, e.Seq, e.WorkspaceID, p.WorkspaceID)
			case e.Seq != p.Seq+1:
				return "", fmt.Errorf("%w: entry %d follows entry %d", ErrBroken, e.Seq, p.Seq)
			case e.Prev != p.Hash:
				return "", fmt.Errorf("%w: entry %d: prev is not the hash of entry %d", ErrBroken, e.Seq, p.Seq)
			}
		} else if e.Seq == 1 && e.Prev != canon.ZeroHash {
			return "", fmt.Errorf("%w: entry 1: prev must be 64 zeros", ErrBroken)
		} else if e.Seq < 1 {
			return "", fmt.Errorf("%w: seq %d: entries count from 1", ErrBroken, e.Seq)
		}
		h, err := Hash(e)
		if err != nil {
			return "", err
		}
		if h != e.Hash {
			return "", fmt.Errorf("%w: entry %d: its hash does not match its contents", ErrBroken, e.Seq)
		}
		head = h
	}
	return head, nil
}
