package venue

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/store"
)

// A signed-in operator's own passkeys: several, so that losing one device
// does not lock them out. They add one with a WebAuthn registration of its
// own kind (ceremonyPasskey, no link involved) and remove any but the last.

const ceremonyPasskey = "passkey"

// The audit actions of an operator's own passkeys.
const (
	ActionPasskeyList   = "passkey.list"
	ActionPasskeyAdd    = "passkey.add"
	ActionPasskeyRemove = "passkey.remove"
)

// ErrLastPasskey refuses to remove an operator's only passkey: they could
// no longer sign in.
var ErrLastPasskey = &room.ValidationError{Field: "passkeyId", Reason: "this is your only passkey: add another before removing it, or you could no longer sign in"}

// PasskeyView is one of an operator's passkeys as the console lists it:
// its credential id (unpadded base64url), when it was registered and
// when it last signed in.
type PasskeyView struct {
	ID         string  `json:"id"`
	CreatedAt  string  `json:"createdAt"`
	LastUsedAt *string `json:"lastUsedAt"`
}

// PasskeyList is the calling operator's passkeys, oldest first.
type PasskeyList struct {
	Passkeys []PasskeyView `json:"passkeys"`
}

// callOperator is the operator a console call acts as, read anew.
func (v *Venue) callOperator(ctx context.Context, tx *store.Tx, c OperatorCall) (store.Operator, error) {
	id, err := uuid.Parse(c.Actor.ID)
	if err != nil {
		return store.Operator{}, ErrUnauthorized
	}
	op, err := tx.OperatorGet(ctx, id)
	if err != nil || op.RemovedAt != nil || op.WorkspaceID != c.WorkspaceID {
		return store.Operator{}, ErrUnauthorized
	}
	return op, nil
}

// ListPasskeys returns the calling operator's passkeys.
func (v *Venue) ListPasskeys(ctx context.Context, c OperatorCall) (*PasskeyList, error) {
	_, pks, err := v.ownPasskeys(ctx, c)
	if err != nil {
		return nil, err
	}
	out := &PasskeyList{Passkeys: make([]PasskeyView, 0, len(pks))}
	for _, p := range pks {
		pv := PasskeyView{ID: base64.RawURLEncoding.EncodeToString(p.CredentialID), CreatedAt: canon.FormatTime(p.CreatedAt)}
		if p.LastUsedAt != nil {
			pv.LastUsedAt = ptr(canon.FormatTime(*p.LastUsedAt))
		}
		out.Passkeys = append(out.Passkeys, pv)
	}
	return out, nil
}

// PasskeyBegin starts registering another passkey for the calling
// operator; the authenticator is told which ones it holds already.
func (v *Venue) PasskeyBegin(ctx context.Context, c OperatorCall) (*Ceremony, error) {
	wa, err := v.webAuthn()
	if err != nil {
		return nil, err
	}
	u, err := v.operatorWithPasskeys(ctx, c)
	if err != nil {
		return nil, err
	}
	exclude := make([]protocol.CredentialDescriptor, len(u.creds))
	for i := range u.creds {
		exclude[i] = u.creds[i].Descriptor()
	}
	creation, sd, err := wa.BeginRegistration(u, webauthn.WithExclusions(exclude))
	if err != nil {
		return nil, fmt.Errorf("venue: begin registration: %w", err)
	}
	return v.storeCeremony(ctx, ceremonyPasskey, uuid.Nil, sd, creation.Response, nil)
}

// ownPasskeys reads the calling operator and their passkeys.
func (v *Venue) ownPasskeys(ctx context.Context, c OperatorCall) (store.Operator, []store.Passkey, error) {
	var op store.Operator
	var pks []store.Passkey
	err := v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		var err error
		if op, err = v.callOperator(ctx, tx, c); err != nil {
			return err
		}
		pks, err = tx.PasskeyListForOperator(ctx, op.ID)
		return err
	})
	return op, pks, err
}

func (v *Venue) operatorWithPasskeys(ctx context.Context, c OperatorCall) (operatorUser, error) {
	op, pks, err := v.ownPasskeys(ctx, c)
	return userWithPasskeys(op, pks), err
}

// PasskeyFinish registers the passkey the browser created for the calling
// operator (a ceremony begun for another operator does not verify:
// ErrUnauthorized), and records it in the audit log.
func (v *Venue) PasskeyFinish(ctx context.Context, c OperatorCall, ceremonyID string, credential []byte) (*PasskeyView, error) {
	_, sd, err := v.takeCeremony(ctx, ceremonyID, ceremonyPasskey)
	if err != nil {
		return nil, err
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(credential)
	if err != nil {
		return nil, ErrUnauthorized
	}
	wa, err := v.webAuthn()
	if err != nil {
		return nil, err
	}
	u, err := v.operatorWithPasskeys(ctx, c)
	if err != nil {
		return nil, err
	}
	cred, err := wa.CreateCredential(u, sd, parsed) // checks the session's user is u
	if err != nil {
		return nil, ErrUnauthorized
	}
	credJSON, err := json.Marshal(cred)
	if err != nil {
		return nil, err
	}
	now := canon.Now(v.now())
	id := base64.RawURLEncoding.EncodeToString(cred.ID)
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		if err := tx.PasskeyInsert(ctx, store.Passkey{CredentialID: cred.ID, WorkspaceID: u.op.WorkspaceID, OperatorID: u.op.ID, Credential: credJSON, CreatedAt: now}); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionPasskeyAdd, map[string]string{"operatorId": u.op.ID.String(), "passkeyId": id})
	})
	if err != nil {
		return nil, fmt.Errorf("venue: add passkey: %w", err)
	}
	return &PasskeyView{ID: id, CreatedAt: canon.FormatTime(now)}, nil
}

// RemovePasskey removes one of the calling operator's passkeys, named by
// its id, unless it is their last (ErrLastPasskey); one they do not have
// is room.ErrNotFound.
func (v *Venue) RemovePasskey(ctx context.Context, c OperatorCall, passkeyID string) error {
	raw, err := base64.RawURLEncoding.DecodeString(passkeyID)
	if err != nil || len(raw) == 0 {
		return room.ErrNotFound
	}
	return v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		op, err := v.callOperator(ctx, tx, c)
		if err != nil {
			return err
		}
		ids, err := tx.PasskeyLockForOperator(ctx, op.ID)
		if err != nil {
			return err
		}
		held := false
		for _, id := range ids {
			held = held || string(id) == string(raw)
		}
		switch {
		case !held:
			return room.ErrNotFound
		case len(ids) == 1:
			return ErrLastPasskey
		}
		if _, err := tx.PasskeyDelete(ctx, op.ID, raw); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionPasskeyRemove, map[string]string{"operatorId": op.ID.String(), "passkeyId": passkeyID})
	})
}
