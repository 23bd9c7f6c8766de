// Package jwk holds the Ed25519 keys and signatures of Consensus in their
// published forms: a public key as an OKP JSON Web Key (RFC 8037: kty, crv,
// x), its RFC 7638 thumbprint (the kid the service publishes), a JWKS as
// served at /.well-known/consensus-keys, and an Ed25519 signature as
// unpadded base64url. Participants' keys, the service's keys and every
// verifier share these definitions. The package is pure: no I/O, no clock.
package jwk
