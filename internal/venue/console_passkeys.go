package venue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
)

// The WebAuthn ceremonies: an enrollment link registers a passkey
// (EnrollBegin, EnrollFinish) and a passkey signs in (SignInBegin,
// SignInFinish); each ends by starting a console session.
const (
	// ceremonyTTL bounds the time between a ceremony's two requests.
	ceremonyTTL = 5 * time.Minute

	ceremonyEnroll = "enroll"
	ceremonySignIn = "signin"
)

// A link that named an operator still present but can no longer enroll
// is refused with its reason: only the holder of the link's secret learns
// it. An unknown link, or one voided by the operator's removal, is
// room.ErrNotFound.
var (
	ErrEnrollmentExpired = errors.New("this enrollment link expired: it works within 24 hours; ask an owner of the workspace for a new one")
	ErrEnrollmentUsed    = errors.New("this enrollment link was used already: it registers one passkey, once; sign in with that passkey, or ask an owner of the workspace for a new link")
)

// ErrPasskeyOrigin is a configuration the console's passkeys cannot work
// with: the service's origin is not one WebAuthn accepts (an IP address).
// The error's text names the origin and the fix.
var ErrPasskeyOrigin = errors.New("the console's passkeys cannot work at this service's origin")

// passkeyOriginError says why an origin whose host is an IP address
// cannot serve passkeys, and what to set instead.
func passkeyOriginError(origin string) error {
	u, _ := url.Parse(origin)
	fix := "a domain name, such as https://consensus.example.com"
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
		fix = u.Scheme + "://localhost"
		if u.Port() != "" {
			fix += ":" + u.Port()
		}
	}
	return fmt.Errorf("%w: %s has an IP address for its host, and a passkey's relying party must be a domain name; set CONSENSUS_PUBLIC_ORIGIN=%s, restart the service and open the console there", ErrPasskeyOrigin, origin, fix)
}

// operatorUser is an operator as go-webauthn sees it: the user handle is
// the operator's id, so a passkey names the operator (and its workspace).
type operatorUser struct {
	op    store.Operator
	creds []webauthn.Credential
}

func (u operatorUser) WebAuthnID() []byte { b := u.op.ID; return b[:] }
func (u operatorUser) WebAuthnName() string {
	return u.op.Email
}
func (u operatorUser) WebAuthnDisplayName() string {
	if u.op.DisplayName != "" {
		return u.op.DisplayName
	}
	return u.op.Email
}
func (u operatorUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// userWithPasskeys is op holding its stored passkeys; one whose stored
// credential does not decode is left out.
func userWithPasskeys(op store.Operator, pks []store.Passkey) operatorUser {
	u := operatorUser{op: op}
	for _, p := range pks {
		var wc webauthn.Credential
		if json.Unmarshal(p.Credential, &wc) == nil {
			u.creds = append(u.creds, wc)
		}
	}
	return u
}

var (
	waMu    sync.Mutex
	waCache = map[string]*webauthn.WebAuthn{}
)

// webAuthn is the relying party of the venue's origin: its host is the
// RP id, and only the origin itself may answer a ceremony.
func (v *Venue) webAuthn() (*webauthn.WebAuthn, error) {
	waMu.Lock()
	defer waMu.Unlock()
	if w := waCache[v.Origin]; w != nil {
		return w, nil
	}
	if host := originHost(v.Origin); net.ParseIP(host) != nil {
		return nil, passkeyOriginError(v.Origin)
	}
	w, err := webauthn.New(&webauthn.Config{
		RPID: originHost(v.Origin), RPDisplayName: "Consensus", RPOrigins: []string{v.Origin},
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementRequired, RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification: protocol.VerificationPreferred,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not an origin passkeys accept (%v); set CONSENSUS_PUBLIC_ORIGIN to the https:// origin the console is opened at", ErrPasskeyOrigin, v.Origin, err)
	}
	waCache[v.Origin] = w
	return w, nil
}

// Ceremony is the first half of a WebAuthn ceremony: its id, which the
// second request names, and the options for navigator.credentials.
type Ceremony struct {
	CeremonyID string          `json:"ceremonyId"`
	PublicKey  json.RawMessage `json:"publicKey"`
	// Operator is who enrolls (enrollment only).
	Operator *OperatorView `json:"operator,omitempty"`
}

// enrollmentFor finds the usable link a token names, with its operator:
// ErrEnrollmentUsed or ErrEnrollmentExpired for a link of a present
// operator that can no longer enroll, room.ErrNotFound for anything else.
func (v *Venue) enrollmentFor(ctx context.Context, token string) (store.Enrollment, store.Operator, error) {
	if !strings.HasPrefix(token, PrefixEnrollment) {
		return store.Enrollment{}, store.Operator{}, room.ErrNotFound
	}
	h := secret.Hash(token)
	e, err := v.Store.EnrollmentGetByTokenHash(ctx, h)
	if err != nil {
		return store.Enrollment{}, store.Operator{}, err
	}
	if !secret.Equal(h, e.TokenHash) {
		return store.Enrollment{}, store.Operator{}, room.ErrNotFound
	}
	op, err := v.Store.OperatorGet(ctx, e.OperatorID)
	if err != nil {
		return store.Enrollment{}, store.Operator{}, err
	}
	switch {
	case op.RemovedAt != nil, e.WithdrawnAt != nil:
		return store.Enrollment{}, store.Operator{}, room.ErrNotFound
	case e.UsedAt != nil:
		return store.Enrollment{}, store.Operator{}, ErrEnrollmentUsed
	case !v.now().Before(e.ExpiresAt):
		return store.Enrollment{}, store.Operator{}, ErrEnrollmentExpired
	}
	return e, op, nil
}

// EnrollBegin starts registering a passkey with an enrollment link.
func (v *Venue) EnrollBegin(ctx context.Context, token string) (*Ceremony, error) {
	wa, err := v.webAuthn() // a link cannot work where passkeys cannot
	if err != nil {
		return nil, err
	}
	e, op, err := v.enrollmentFor(ctx, token)
	if err != nil {
		return nil, err
	}
	creation, sd, err := wa.BeginRegistration(operatorUser{op: op})
	if err != nil {
		return nil, fmt.Errorf("venue: begin registration: %w", err)
	}
	return v.storeCeremony(ctx, ceremonyEnroll, e.ID, sd, creation.Response, &op)
}

func (v *Venue) storeCeremony(ctx context.Context, kind string, enrollment uuid.UUID, sd *webauthn.SessionData, options any, op *store.Operator) (*Ceremony, error) {
	data, err := json.Marshal(sd)
	if err != nil {
		return nil, err
	}
	opts, err := json.Marshal(options)
	if err != nil {
		return nil, err
	}
	c := store.Ceremony{ID: uuid.New(), Kind: kind, EnrollmentID: enrollment, Data: data, ExpiresAt: v.now().Add(ceremonyTTL)}
	if err := v.Store.CeremonyInsert(ctx, c); err != nil {
		return nil, err
	}
	out := &Ceremony{CeremonyID: c.ID.String(), PublicKey: opts}
	if op != nil {
		ov := operatorView(*op, nil, v.now())
		out.Operator = &ov
	}
	return out, nil
}

// takeCeremony reads and ends a ceremony; an unknown, used or expired one
// is ErrUnauthorized.
func (v *Venue) takeCeremony(ctx context.Context, id, kind string) (store.Ceremony, webauthn.SessionData, error) {
	var sd webauthn.SessionData
	u, err := uuid.Parse(id)
	if err != nil {
		return store.Ceremony{}, sd, ErrUnauthorized
	}
	c, err := v.Store.CeremonyTake(ctx, u, kind)
	if errors.Is(err, room.ErrNotFound) || err == nil && !v.now().Before(c.ExpiresAt) {
		return store.Ceremony{}, sd, ErrUnauthorized
	}
	if err != nil {
		return store.Ceremony{}, sd, err
	}
	if err := json.Unmarshal(c.Data, &sd); err != nil {
		return store.Ceremony{}, sd, fmt.Errorf("venue: ceremony: %w", err)
	}
	return c, sd, nil
}

// EnrollFinish registers the passkey the browser created, uses the link,
// and signs the operator in. displayName, when set, becomes the
// operator's. A link used or expired meanwhile is ErrEnrollmentUsed or
// ErrEnrollmentExpired, and nothing is stored; a response that does not
// verify, ErrUnauthorized.
func (v *Venue) EnrollFinish(ctx context.Context, ceremonyID, token, displayName string, credential []byte, c OperatorCall) (*ConsoleSignIn, error) {
	if displayName != "" {
		if err := room.ValidateLine("displayName", displayName, 1, 100); err != nil {
			return nil, err
		}
	}
	e, op, err := v.enrollmentFor(ctx, token)
	if err != nil {
		return nil, err
	}
	cer, sd, err := v.takeCeremony(ctx, ceremonyID, ceremonyEnroll)
	if err != nil {
		return nil, err
	}
	if cer.EnrollmentID != e.ID {
		return nil, ErrUnauthorized
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(credential)
	if err != nil {
		return nil, ErrUnauthorized
	}
	wa, err := v.webAuthn()
	if err != nil {
		return nil, err
	}
	cred, err := wa.CreateCredential(operatorUser{op: op}, sd, parsed)
	if err != nil {
		return nil, ErrUnauthorized
	}
	credJSON, err := json.Marshal(cred)
	if err != nil {
		return nil, err
	}
	now := canon.Now(v.now())
	c.Principal = operatorPrincipal(op)
	out := &ConsoleSignIn{Token: PrefixConsole + secret.Random(32), OperatorID: op.ID.String(), Call: c}
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		ok, err := tx.EnrollmentUse(ctx, e.ID, now)
		if err != nil {
			return err
		}
		if !ok { // used, or expired, since the check above
			if !now.Before(e.ExpiresAt) {
				return ErrEnrollmentExpired
			}
			return ErrEnrollmentUsed
		}
		if displayName != "" {
			if err := tx.OperatorSetName(ctx, op.ID, displayName); err != nil {
				return err
			}
		}
		if err := tx.PasskeyInsert(ctx, store.Passkey{CredentialID: cred.ID, WorkspaceID: op.WorkspaceID, OperatorID: op.ID, Credential: credJSON, CreatedAt: now}); err != nil {
			return err
		}
		if err := tx.ConsoleSessionInsert(ctx, secret.Hash(out.Token), op.WorkspaceID, op.ID, now); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionOperatorEnroll, map[string]string{"operatorId": op.ID.String()})
	})
	if err != nil {
		return nil, fmt.Errorf("venue: enroll: %w", err)
	}
	return out, nil
}

// SignInBegin starts a sign-in with any passkey of this origin (a
// discoverable credential: the operator is not asked who they are).
func (v *Venue) SignInBegin(ctx context.Context) (*Ceremony, error) {
	wa, err := v.webAuthn()
	if err != nil {
		return nil, err
	}
	assertion, sd, err := wa.BeginDiscoverableLogin()
	if err != nil {
		return nil, fmt.Errorf("venue: begin sign-in: %w", err)
	}
	return v.storeCeremony(ctx, ceremonySignIn, uuid.Nil, sd, assertion.Response, nil)
}

// SignInFinish checks the browser's assertion and starts a session. Every
// refusal is ErrUnauthorized; one for a known passkey is recorded in its
// workspace's audit log.
func (v *Venue) SignInFinish(ctx context.Context, ceremonyID string, credential []byte, c OperatorCall) (*ConsoleSignIn, error) {
	_, sd, err := v.takeCeremony(ctx, ceremonyID, ceremonySignIn)
	if err != nil {
		return nil, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(credential)
	if err != nil {
		return nil, ErrUnauthorized
	}
	wa, err := v.webAuthn()
	if err != nil {
		return nil, err
	}
	var found *store.Operator
	var dbErr error
	user, cred, err := wa.ValidatePasskeyLogin(func(rawID, userHandle []byte) (webauthn.User, error) {
		pk, err := v.Store.PasskeyGet(ctx, rawID)
		if err != nil {
			dbErr = err
			return nil, err
		}
		op, err := v.Store.OperatorGet(ctx, pk.OperatorID)
		if err != nil {
			dbErr = err
			return nil, err
		}
		found = &op
		if op.RemovedAt != nil || string(userHandle) != string(op.ID[:]) {
			return nil, ErrUnauthorized
		}
		pks, err := v.Store.PasskeyListForOperator(ctx, op.ID)
		if err != nil {
			dbErr = err
			return nil, err
		}
		return userWithPasskeys(op, pks), nil
	}, sd, parsed)
	if dbErr != nil && !errors.Is(dbErr, room.ErrNotFound) {
		return nil, dbErr
	}
	if err != nil {
		if found != nil {
			c.Principal = operatorPrincipal(*found)
			_ = v.RecordRefusal(ctx, c, ActionOperatorSignIn, map[string]string{"operatorId": found.ID.String()}, "unauthorized")
		}
		return nil, ErrUnauthorized
	}
	op := user.(operatorUser).op
	credJSON, err := json.Marshal(cred)
	if err != nil {
		return nil, err
	}
	now := canon.Now(v.now())
	c.Principal = operatorPrincipal(op)
	out := &ConsoleSignIn{Token: PrefixConsole + secret.Random(32), OperatorID: op.ID.String(), Call: c}
	err = v.inWorkspace(ctx, c, func(tx *store.Tx) error {
		if err := tx.PasskeyUpdate(ctx, cred.ID, credJSON, now); err != nil {
			return err
		}
		if err := tx.ConsoleSessionInsert(ctx, secret.Hash(out.Token), op.WorkspaceID, op.ID, now); err != nil {
			return err
		}
		return v.audited(ctx, tx, c, ActionOperatorSignIn, map[string]string{"operatorId": op.ID.String()})
	})
	if err != nil {
		return nil, fmt.Errorf("venue: sign in: %w", err)
	}
	return out, nil
}
