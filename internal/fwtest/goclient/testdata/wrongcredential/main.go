// Command wrongcredential must not compile: a participant client has no
// claim, which takes the session token. TestWrongCredentialDoesNotCompile
// builds it and expects exactly that error.
package main

import (
	"context"

	"github.com/google/uuid"

	"github.com/consensus-md/consensus/internal/fwtest/goclient/oapiclient"
)

func main() {
	c, _ := oapiclient.NewClientWithResponses("http://127.0.0.1:8080")
	p := oapiclient.NewParticipantClient(c, oapiclient.ParticipantToken("csp_x"))
	_, _ = p.ClaimSlotWithResponse(context.Background(), uuid.Nil, oapiclient.ClaimRequest{})
}
