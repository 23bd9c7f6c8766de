package httpapi

import (
	"github.com/consensus-md/consensus/internal/agentroute"
	"github.com/consensus-md/consensus/internal/live"
	"github.com/consensus-md/consensus/internal/venue"
)

// LiveCapability describes waiting for the others (R-LIVE): the feed, long
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
	Advice                string `json:"advice"`
}

func (s *Server) liveCapability() LiveCapability {
	base := s.origin + agentroute.Pattern
	perParticipant, perReplica := s.hub.Bounds()
	return LiveCapability{
		Feed: "GET " + base + agentroute.Events + "?after={seq}&limit={n}", Stream: "GET " + base + agentroute.Stream,
		Wait:           "Prefer: wait=<seconds> on GET room (with If-None-Match) and GET events",
		MaxWaitSeconds: int(live.MaxWait.Seconds()), KeepAliveSeconds: int(live.KeepAlive.Seconds()),
		FeedDefaultLimit: venue.FeedDefaultLimit, FeedMaxLimit: venue.FeedMaxLimit,
		WaitingPerParticipant: perParticipant, WaitingPerReplica: perReplica, BusyRetryAfterSeconds: busyRetrySeconds,
		Advice: "Open one stream and resume with Last-Event-ID; without SSE, long-poll the feed with Prefer: wait=60 and ?after=<next>, " +
			"one request at a time. Stop when the outcome is not pending or the deadline has passed.",
	}
}
