package room

// AssuranceDKIMReply is the assurance of a slot claimed by a reply to its
// invitation email: sent from the invited address and signed by that
// address's domain (DKIM). It is not the participant's signature.
const AssuranceDKIMReply = "recipient-dkim-reply"
