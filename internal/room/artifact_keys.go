package room

import (
	"fmt"
	"strings"
)

// writeSigned writes, after the decisions table, one line for each listed
// decision its participant signed with the Ed25519 key it bound at claim,
// in roster order, naming the key by its RFC 7638 thumbprint; with none it
// writes nothing, so a record without keyed decisions is unchanged. The
// thumbprint is base64url, which no Markdown reads as structure; the
// display name is inline text, as in writeReplies.
func writeSigned(b *strings.Builder, in ArtifactInput) {
	first := true
	for _, e := range in.Roster {
		if e.Decision == "" || e.KeyThumbprint == "" {
			continue
		}
		if first {
			b.WriteString("\nDecisions signed with the participant's own Ed25519 key, bound when it claimed its slot; the signed record carries each signature and key, which a verifier re-checks offline:\n\n")
			first = false
		}
		fmt.Fprintf(b, "- Participant %s (`%s`): %s signed with the key of RFC 7638 thumbprint `%s`\n",
			inlineText(e.Participant.DisplayName), e.Participant.ParticipantID, e.Decision, e.KeyThumbprint)
	}
}
