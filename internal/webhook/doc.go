// Package webhook holds the rules of the opt-in webhooks, free of the
// database: which https:// endpoints and
// addresses may receive them (checked at registration and again when
// connecting), the Standard Webhooks v1 signature with the service's
// Ed25519 key (v1a) and its verification, and the retry schedule. The API
// (registration), the CLI (consensus verify webhook, which links no
// database code) and package deliver, which drains the durable queue the
// database fills in the transaction of each room change, share them.
package webhook
