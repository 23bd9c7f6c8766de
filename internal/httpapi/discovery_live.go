package httpapi

import (
	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/live"
	"github.com/consensus-md/consensus/internal/venue"
	"github.com/consensus-md/consensus/internal/webhook"
)

// retrySeconds is the webhook retry schedule in seconds.
func retrySeconds() []int {
	out := make([]int, len(webhook.Schedule))
	for i, d := range webhook.Schedule {
		out[i] = int(d.Seconds())
	}
	return out
}

// LiveCapability describes waiting for the others: the feed, long
// polling and the stream, with the bounds this replica enforces, from the
// same constants the handlers use.
type LiveCapability struct {
	Feed                  string `json:"feed"`
	Stream                string `json:"stream"`
	Wait                  string `json:"wait"`
	MaxWaitSeconds        int    `json:"maxWaitSeconds"`
	KeepAliveSeconds      int    `json:"keepAliveSeconds"`
	FeedDefaultLimit      int    `json:"feedDefaultLimit"`
	FeedMaxLimit          int    `json:"feedMaxLimit"`
	WaitingPerParticipant int    `json:"waitingPerParticipant"`
	WaitingPerReplica     int    `json:"waitingPerReplica"`
	BusyRetryAfterSeconds int    `json:"busyRetryAfterSeconds"`
	Webhook               string `json:"webhook"`
	WebhookSignature      string `json:"webhookSignature"`
	WebhookRetrySeconds   []int  `json:"webhookRetrySeconds"`
	WebhookTimeoutSeconds int    `json:"webhookTimeoutSeconds"`
	Advice                string `json:"advice"`
}

func (s *Server) liveCapability() LiveCapability {
	base := s.origin + agentroute.Pattern
	perParticipant, perReplica := s.hub.Bounds()
	return LiveCapability{
		Feed: "GET " + base + agentroute.Events + "?after={seq}&limit={n}", Stream: "GET " + base + agentroute.Stream,
		Wait:           "Prefer: wait=<seconds> on GET room (with If-None-Match) and GET events; over MCP, the wait_for_change tool",
		MaxWaitSeconds: int(live.MaxWait.Seconds()), KeepAliveSeconds: int(live.KeepAlive.Seconds()),
		FeedDefaultLimit: venue.FeedDefaultLimit, FeedMaxLimit: venue.FeedMaxLimit,
		Webhook:             "PUT|GET|DELETE " + base + agentroute.Webhook + ` {"url": "https://…"}`,
		WebhookSignature:    "Standard Webhooks v1: webhook-signature v1a,<base64 Ed25519 over id.timestamp.body> by a key of " + s.origin + "/.well-known/consensus-keys",
		WebhookRetrySeconds: retrySeconds(), WebhookTimeoutSeconds: int(webhook.Timeout.Seconds()),
		WaitingPerParticipant: perParticipant, WaitingPerReplica: perReplica, BusyRetryAfterSeconds: busyRetrySeconds,
		Advice: "Open one stream and resume with Last-Event-ID; without SSE, long-poll the feed with Prefer: wait=60 and ?after=<next>, " +
			"one request at a time. Stop when the outcome is not pending or the deadline has passed.",
	}
}
