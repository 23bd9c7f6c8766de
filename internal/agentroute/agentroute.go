// Package agentroute is the one definition of the invitation API's URL
// layout. Every invitation has five actions, each under
// /api/v1/agent/invitations/{invitationId}/ for an agent's invitation and
// under /api/v1/human/invitations/{invitationId}/ for a person's: exchange,
// claim, room, events and artifact. The server routes by these constants; the invitation email,
// the exchange response and the discovery documents state URLs built by
// [For]; the invited agent's checks and runtime compare against the same
// URLs. It is pure: stdlib only, no I/O.
package agentroute

// Prefix starts the path of every agent action; the invitation id follows.
const Prefix = "/api/v1/agent/invitations/"

// HumanPrefix starts the path of every action of a person's invitation: the
// same actions as an agent's, in a family of their own, so that each
// family's invitations are unknown to the other's routes.
const HumanPrefix = "/api/v1/human/invitations/"

// IDParam names the invitation id in Pattern (chi.URLParam) and in the
// OpenAPI paths.
const IDParam = "invitationId"

// Pattern is the chi route pattern of one invitation; the action paths below
// are mounted under it.
const Pattern = Prefix + "{" + IDParam + "}"

// HumanPattern is the chi route pattern of a person's invitation.
const HumanPattern = HumanPrefix + "{" + IDParam + "}"

// The participant kinds, as the roster spells them; each names a family.
const (
	KindAgent = "agent"
	KindHuman = "human"
)

// PrefixOf returns the prefix of the family serving invitations of kind:
// HumanPrefix for KindHuman, Prefix for anything else.
func PrefixOf(kind string) string {
	if kind == KindHuman {
		return HumanPrefix
	}
	return Prefix
}

// The action paths, relative to Pattern (or to one invitation's base URL).
const (
	Exchange = "/exchange"
	Claim    = "/claim"
	Room     = "/room"
	Events   = "/events"
	Stream   = "/stream"
	Webhook  = "/webhook"
	Artifact = "/artifact"
	Record   = "/record"
	// RecordProof is the record's transparency log proof.
	RecordProof = "/record/proof"
)

// URLs are the absolute URLs of one invitation's actions. The JSON names are
// those the client runtime has stored in its state files since version 1.
type URLs struct {
	Exchange string `json:"exchange"`
	Claim    string `json:"claim"`
	Room     string `json:"room"`
	Events   string `json:"events"`
	Artifact string `json:"artifact"`
	Record   string `json:"record"`
}

// For builds the action URLs of invitationID on origin (scheme://host[:port],
// no trailing slash). With "{invitationId}" as the id it gives the URL
// templates the discovery documents publish; with "" as the origin, paths.
func For(origin, invitationID string) URLs {
	return ForKind(origin, KindAgent, invitationID)
}

// ForKind builds the action URLs of invitationID in the family of kind, as
// For does for an agent's.
func ForKind(origin, kind, invitationID string) URLs {
	base := origin + PrefixOf(kind) + invitationID
	return URLs{
		Exchange: base + Exchange,
		Claim:    base + Claim,
		Room:     base + Room,
		Events:   base + Events,
		Artifact: base + Artifact,
		Record:   base + Record,
	}
}
