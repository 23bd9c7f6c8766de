// Package webhook delivers the opt-in webhooks of SPEC R-LIVE-HOOK: it
// drains the durable queue the database fills in the transaction of each
// room change, signs each delivery by Standard Webhooks v1 with the
// service's Ed25519 key (v1a), and sends it only to https:// endpoints whose
// address, checked again when connecting, is public. Its URL and address
// rules and the signature format are pure functions, shared with the API
// (registration) and the CLI (consensus verify webhook).
package webhook
