package deliver

import (
	"encoding/json"

	"github.com/consensus-md/consensus/internal/store"
)

// Payload is a delivery's whole body (thin: ids, the seq and the outcome
// status; never participant text, never a credential). The receiver reads
// the room for content.
type Payload struct {
	Type         string `json:"type"`
	AgreementID  string `json:"agreementId"`
	InvitationID string `json:"invitationId"`
	Seq          int64  `json:"seq"`
	Outcome      string `json:"outcome"`
}

// Body encodes d's payload; the same delivery always gives the same bytes.
func Body(d store.WebhookDelivery) []byte {
	b, err := json.Marshal(Payload{Type: d.Type, AgreementID: d.AgreementID.String(), InvitationID: d.InvitationID.String(), Seq: d.Seq, Outcome: d.Outcome})
	if err != nil {
		panic("deliver: a payload of strings and an integer always encodes")
	}
	return b
}
