package webhook

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks v1 headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Tolerance is how far a webhook-timestamp may be from the verifier's
// clock (Standard Webhooks: 5 minutes), against replays.
const Tolerance = 5 * time.Minute

// signedContent is what a signature covers: id.timestamp.body.
func signedContent(id string, timestamp int64, body []byte) []byte {
	b := make([]byte, 0, len(id)+len(body)+24)
	b = append(b, id...)
	b = append(b, '.')
	b = strconv.AppendInt(b, timestamp, 10)
	b = append(b, '.')
	return append(b, body...)
}

// Sign is the webhook-signature value of one delivery: "v1a," and the
// standard base64 Ed25519 signature over id.timestamp.body.
func Sign(key ed25519.PrivateKey, id string, timestamp int64, body []byte) string {
	return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(key, signedContent(id, timestamp, body)))
}

// Verification failures.
var (
	ErrNoSignature = errors.New("webhook: no v1a signature verifies with the given keys")
	ErrTimestamp   = errors.New("webhook: webhook-timestamp is missing, malformed or more than 5 minutes from now")
)

// Verify checks a delivery: the timestamp within Tolerance of now, and at
// least one v1a entry of the space-separated signature header verifying
// with one of keys over id.timestamp.body.
func Verify(keys []ed25519.PublicKey, id, timestamp, signature string, body []byte, now time.Time) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || now.Sub(time.Unix(ts, 0)).Abs() > Tolerance || id == "" {
		return ErrTimestamp
	}
	msg := signedContent(id, ts, body)
	for _, entry := range strings.Fields(signature) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1a" {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(sig)
		if err != nil || len(raw) != ed25519.SignatureSize {
			continue
		}
		for _, k := range keys {
			if len(k) == ed25519.PublicKeySize && ed25519.Verify(k, msg, raw) {
				return nil
			}
		}
	}
	return ErrNoSignature
}
