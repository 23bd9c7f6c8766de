package venue

import (
	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/room"
)

// slotCommand is cmd naming the participant slot that posts it: the
// command a signature is checked against and the event stores.
func slotCommand(cmd room.Command, agreementID, invitationID, participantID uuid.UUID) room.Command {
	cmd.AgreementID, cmd.InvitationID, cmd.ParticipantID = agreementID.String(), invitationID.String(), participantID.String()
	return cmd
}

// CommandToSign returns the exact bytes p signs to post in with the
// idempotency key key: the canonical room-command/v2 (bound to key) the
// events use case builds from the same input and checks a signature
// against. It checks the
// input's syntax as posting does (*room.ValidationError); whether the
// revision is current is for the post to say.
func (v *Venue) CommandToSign(p *Principal, key string, in EventInput) ([]byte, error) {
	cmd, err := v.command(key, in)
	if err != nil {
		return nil, err
	}
	return commandBytes(slotCommand(cmd, p.AgreementID, p.InvitationID, p.ParticipantID).Signed(v.Origin, key)), nil
}
