// Package passkey is a software WebAuthn authenticator for tests: it
// answers the console's registration and sign-in options as a platform
// authenticator holding one discoverable ES256 credential would (attestation
// "none"), so that Go tests sign operators in through the real ceremony.
// It also holds the few HTTP steps of enrolling and signing in.
package passkey

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/fxamacker/cbor/v2"
)

var b64 = base64.RawURLEncoding

// Authenticator holds one credential for one origin.
type Authenticator struct {
	Origin     string
	key        *ecdsa.PrivateKey
	credID     []byte
	userHandle []byte
	rpID       string
	count      uint32
}

// New returns an authenticator for origin with no credential yet.
func New(origin string) *Authenticator {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	id := make([]byte, 32)
	_, _ = rand.Read(id)
	return &Authenticator{Origin: origin, key: k, credID: id}
}

type options struct {
	Challenge string `json:"challenge"`
	RP        struct {
		ID string `json:"id"`
	} `json:"rp"`
	RPID string `json:"rpId"`
	User struct {
		ID string `json:"id"`
	} `json:"user"`
}

func (a *Authenticator) clientData(kind, challenge string) []byte {
	b, _ := json.Marshal(map[string]any{"type": kind, "challenge": challenge, "origin": a.Origin, "crossOrigin": false})
	return b
}

func (a *Authenticator) authData(flags byte, attested []byte) []byte {
	rp := sha256.Sum256([]byte(a.rpID))
	a.count++
	out := append(rp[:], flags)
	out = binary.BigEndian.AppendUint32(out, a.count)
	return append(out, attested...)
}

// Create answers registration options (the publicKey member the console
// receives) with a new credential, as the browser's toJSON() writes it.
func (a *Authenticator) Create(publicKey json.RawMessage) (json.RawMessage, error) {
	var o options
	if err := json.Unmarshal(publicKey, &o); err != nil {
		return nil, err
	}
	a.rpID = o.RP.ID
	uh, err := b64.DecodeString(o.User.ID)
	if err != nil {
		return nil, fmt.Errorf("passkey: user id: %w", err)
	}
	a.userHandle = uh
	x, y := a.key.X.FillBytes(make([]byte, 32)), a.key.Y.FillBytes(make([]byte, 32))
	cose, err := cbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: x, -3: y})
	if err != nil {
		return nil, err
	}
	att := make([]byte, 16) // AAGUID: none
	att = binary.BigEndian.AppendUint16(att, uint16(len(a.credID)))
	att = append(append(att, a.credID...), cose...)
	ad := a.authData(0x45, att) // user present, user verified, attested credential data
	obj, err := cbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": ad})
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"id": b64.EncodeToString(a.credID), "rawId": b64.EncodeToString(a.credID), "type": "public-key",
		"response":               map[string]any{"clientDataJSON": b64.EncodeToString(a.clientData("webauthn.create", o.Challenge)), "attestationObject": b64.EncodeToString(obj)},
		"clientExtensionResults": map[string]any{}})
}

// Get answers sign-in options with an assertion of the credential.
func (a *Authenticator) Get(publicKey json.RawMessage) (json.RawMessage, error) {
	var o options
	if err := json.Unmarshal(publicKey, &o); err != nil {
		return nil, err
	}
	if o.RPID != "" {
		a.rpID = o.RPID
	}
	cd := a.clientData("webauthn.get", o.Challenge)
	ad := a.authData(0x05, nil)
	h := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte(nil), ad...), h[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, a.key, digest[:])
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"id": b64.EncodeToString(a.credID), "rawId": b64.EncodeToString(a.credID), "type": "public-key",
		"response": map[string]any{"clientDataJSON": b64.EncodeToString(cd), "authenticatorData": b64.EncodeToString(ad),
			"signature": b64.EncodeToString(sig), "userHandle": b64.EncodeToString(a.userHandle)},
		"clientExtensionResults": map[string]any{}})
}

// Session is a signed-in console: the cookie and the CSRF token.
type Session struct {
	Cookie *http.Cookie
	CSRF   string
}

// post sends a same-origin console request to base (a replica's URL).
func (a *Authenticator) post(base, path string, body any) (*http.Response, []byte, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(http.MethodPost, base+path, r)
	req.Header.Set("Origin", a.Origin)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func (a *Authenticator) finish(resp *http.Response, b []byte, err error) (*Session, error) {
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("passkey: finish: %d %s", resp.StatusCode, b)
	}
	var v struct {
		CSRFToken string `json:"csrfToken"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	for _, c := range resp.Cookies() {
		if c.Value != "" {
			return &Session{Cookie: c, CSRF: v.CSRFToken}, nil
		}
	}
	return nil, fmt.Errorf("passkey: no session cookie")
}

type ceremony struct {
	CeremonyID string          `json:"ceremonyId"`
	PublicKey  json.RawMessage `json:"publicKey"`
}

func begin(resp *http.Response, b []byte, err error) (ceremony, error) {
	var c ceremony
	if err != nil {
		return c, err
	}
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("passkey: begin: %d %s", resp.StatusCode, b)
	}
	return c, json.Unmarshal(b, &c)
}

// Enroll registers this authenticator's credential with an enrollment
// token (the link's fragment) and returns the session it starts.
func (a *Authenticator) Enroll(base, token string) (*Session, error) {
	finish, err := a.EnrollBegin(base, token)
	if err != nil {
		return nil, err
	}
	return finish()
}

// EnrollBegin takes the first step of Enroll and returns the second, for
// a test to take later (after the link was used, or expired).
func (a *Authenticator) EnrollBegin(base, token string) (finish func() (*Session, error), err error) {
	c, err := begin(a.post(base, "/console/api/enroll/begin", map[string]string{"token": token}))
	if err != nil {
		return nil, err
	}
	cred, err := a.Create(c.PublicKey)
	if err != nil {
		return nil, err
	}
	return func() (*Session, error) {
		return a.finish(a.post(base, "/console/api/enroll/finish", map[string]any{"ceremonyId": c.CeremonyID, "token": token, "credential": cred}))
	}, nil
}

// SignIn signs in with this authenticator's credential.
func (a *Authenticator) SignIn(base string) (*Session, error) {
	c, err := begin(a.post(base, "/console/api/signin/begin", nil))
	if err != nil {
		return nil, err
	}
	cred, err := a.Get(c.PublicKey)
	if err != nil {
		return nil, err
	}
	return a.finish(a.post(base, "/console/api/signin/finish", map[string]any{"ceremonyId": c.CeremonyID, "credential": cred}))
}
