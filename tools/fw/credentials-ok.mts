// Must compile (tsc -p tsconfig.json, with flow.mts, run by
// internal/fwtest): each credential of credentials.gen.mts opens its own
// routes. Every misuse below is marked @ts-expect-error, so tsc fails if
// any of them compiles. Nothing here runs.
import type { paths } from "./gen/consensus.js";
import {
  credentialed,
  inviteSecret,
  noCredential,
  operations,
  participantToken,
  sessionToken,
  type CredentialOf,
} from "./credentials.gen.mjs";

declare const invitationId: string;
const path = { invitationId };
const api = credentialed<paths>({ baseUrl: "http://127.0.0.1:8080" });

export async function typed(): Promise<void> {
  // Exchange accepts the secret in the header, or no credential and the
  // secret in the body.
  await api.withCredential(inviteSecret("the-secret")).POST("/api/v1/agent/invitations/{invitationId}/exchange", { params: { path }, body: {} });
  await api.withCredential(noCredential).POST("/api/v1/agent/invitations/{invitationId}/exchange", { params: { path }, body: { secret: "the-secret" } });

  const session = api.withCredential(sessionToken("css_x"));
  await session.POST("/api/v1/agent/invitations/{invitationId}/claim", { params: { path }, body: { emailProof: "p", inbox: "a@b.example" } });
  // @ts-expect-error the room takes the participant token, not the session token
  await session.GET("/api/v1/agent/invitations/{invitationId}/room", { params: { path, header: {} } });

  const participant = api.withCredential(participantToken("csp_x"));
  await participant.GET("/api/v1/agent/invitations/{invitationId}/room", { params: { path, header: {} } });
  await participant.GET("/api/v1/agent/invitations/{invitationId}/record", { params: { path, header: {} } });
  // @ts-expect-error claim takes the session token
  await participant.POST("/api/v1/agent/invitations/{invitationId}/claim", { params: { path }, body: { emailProof: "p", inbox: "a@b.example" } });
  // @ts-expect-error exchange takes the invitation secret or nothing
  await participant.POST("/api/v1/agent/invitations/{invitationId}/exchange", { params: { path }, body: {} });

  const anonymous = api.withCredential(noCredential);
  await anonymous.GET("/.well-known/consensus-agent");
  // @ts-expect-error the room needs a credential
  await anonymous.GET("/api/v1/agent/invitations/{invitationId}/room", { params: { path, header: {} } });
  // @ts-expect-error events need a credential
  await anonymous.POST("/api/v1/agent/invitations/{invitationId}/events", {
    params: { path, header: { "Idempotency-Key": "k-00000001" } },
    body: { action: "comment", body: "x", revision: 1, digest: "0" },
  });

  // The table by operationId.
  const kinds: readonly CredentialOf<"readRoom">[] = operations.readRoom.credentials;
  // @ts-expect-error readRoom accepts only the participant token
  const wrong: CredentialOf<"readRoom"> = "session";
  void kinds;
  void wrong;
}
