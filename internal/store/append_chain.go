package store

import (
	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
)

// chain derives, for the items of one agreement judged one after the other
// in a transaction, the state each would read after the writes of the
// ones before it, without reading it: what those writes change of it is
// the agreement's chain head and version, and the counters, idempotency
// keys and signatures of their holders. It follows writes of plain events
// (and writes of nothing); after any other write it closes, and the next
// item reads its state from the database instead.
type chain struct {
	open      bool
	agreement Agreement
	// holders are the holders that wrote, after their writes, by token.
	holders map[string]*TokenHolder
	// keys and signatures are the events written, by holder and
	// idempotency key or signature.
	keys       map[tokenKey]*Event
	signatures map[tokenKey]uuid.UUID
}

type tokenKey struct{ token, key string }

// follow records that an item judged on st wrote w (nothing, for a
// refusal).
func (c *chain) follow(st *AppendState, w AppendWrite) {
	if c.holders == nil {
		c.open, c.agreement = true, st.Agreement
		c.holders, c.keys, c.signatures = map[string]*TokenHolder{}, map[tokenKey]*Event{}, map[tokenKey]uuid.UUID{}
	}
	if w.empty() {
		return
	}
	e := w.Event
	if e == nil || w.Outcome != nil || w.Artifact != nil || room.IsTerminal(e.Action) ||
		st.Holder == nil || e.Revision != st.Agreement.CurrentRevision {
		c.open = false
		return
	}
	c.agreement.Head = ChainHead{Seq: e.Seq, Hash: e.Hash}
	c.agreement.Version++
	h := *st.Holder
	if h.EventsRevision == e.Revision {
		h.EventCount++
	} else {
		h.EventsRevision, h.EventCount = e.Revision, 1
	}
	token := string(h.TokenHash)
	c.holders[token] = &h
	c.keys[tokenKey{token, e.IdempotencyKey}] = e
	if e.Signature != nil {
		c.signatures[tokenKey{token, string(e.Signature)}] = e.ID
	}
}

// derive brings st, which req read before the chain's writes, up to date
// with them. The roster and the revision do not change with plain events.
func (c *chain) derive(st *AppendState, req AppendRequest) {
	st.Agreement = c.agreement
	if st.Holder == nil {
		return
	}
	token := string(req.TokenHash)
	if h, ok := c.holders[token]; ok {
		cp := *h
		st.Holder = &cp
	}
	if e, ok := c.keys[tokenKey{token, req.IdempotencyKey}]; ok {
		prior := *e
		st.Prior = &prior
	}
	if req.Signature != nil {
		if id, ok := c.signatures[tokenKey{token, string(req.Signature)}]; ok {
			st.SignatureEvent = &id
		}
	}
}
