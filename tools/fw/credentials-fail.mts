// Must not compile (tsc -p tsconfig.credentials-fail.json, run by
// internal/fwtest, expects exactly this error): a participant client
// calling claim, which takes the session token.
import type { paths } from "./gen/consensus.js";
import { credentialed, participantToken } from "./credentials.gen.mjs";

declare const invitationId: string;
const participant = credentialed<paths>({ baseUrl: "http://127.0.0.1:8080" }).withCredential(participantToken("csp_x"));

export async function wrongCredential(): Promise<void> {
  await participant.POST("/api/v1/agent/invitations/{invitationId}/claim", {
    params: { path: { invitationId } },
    body: { emailProof: "p", inbox: "a@b.example" },
  });
}
