package agentclient

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/consensus-md/consensus/internal/agentroute"
)

// Following a room: the stream first, long polling when the
// stream is not offered, so an agent learns of a change at once and never
// spins.

// streamIdle is how long a stream may stay silent: the service sends a
// comment at least every 15 seconds, so silence this long is a dead
// connection.
const streamIdle = 45 * time.Second

// longPollWait is the Prefer: wait asked for; the service holds at most 60 s.
const longPollWait = "wait=60"

// Follow calls changed whenever the room at roomURL may have changed, until
// ctx ends (nil) or the token stops being accepted (the *APIError: 401, or
// 404). It follows the room's stream, resuming with Last-Event-ID after a
// disconnect, and long-polls the room instead when the stream is refused
// with another 4xx. Transient failures are retried with a growing pause.
func (c *Client) Follow(ctx context.Context, roomURL, token string, changed func()) error {
	streamURL := strings.TrimSuffix(roomURL, agentroute.Room) + agentroute.Stream
	last, pause := "", time.Second
	poll := false
	for ctx.Err() == nil {
		var answered bool
		var err error
		if poll {
			answered, err = c.longPoll(ctx, roomURL, token, changed)
		} else {
			answered, err = c.streamOnce(ctx, streamURL, token, &last, changed)
		}
		if ctx.Err() != nil {
			return nil
		}
		var ae *APIError
		if errors.As(err, &ae) {
			switch {
			case ae.Status == http.StatusUnauthorized || ae.Status == http.StatusNotFound:
				return err
			case !poll && ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusTooManyRequests:
				poll = true // no stream here: wait with long polls
				continue
			}
		}
		if answered {
			pause = time.Second // the service worked: only failures in a row wait longer
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		pause = min(2*pause, 30*time.Second)
	}
	return nil
}

// longClient is c.HTTP without its overall timeout, for held requests and
// streams, which the caller bounds.
func (c *Client) longClient() *http.Client {
	return &http.Client{Transport: c.HTTP.Transport, CheckRedirect: c.HTTP.CheckRedirect, Jar: c.HTTP.Jar}
}

// streamOnce reads the stream until it fails, calling changed for every
// message and keeping the last event id in *last. answered reports that
// the stream opened: the error that ended it is then no reason to wait
// longer before the next one.
func (c *Client) streamOnce(ctx context.Context, streamURL, token string, last *string, changed func()) (answered bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, streamURL, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Authorization", "Consensus-Participant "+token)
	req.Header.Set("Accept", "text/event-stream")
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	resp, err := c.longClient().Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return false, apiError(resp)
	}
	idle := time.AfterFunc(streamIdle, cancel)
	defer idle.Stop()
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 64<<10), maxResponse)
	id, message := "", false
	for lines.Scan() {
		idle.Reset(streamIdle)
		line := lines.Text()
		switch {
		case line == "":
			if message {
				if id != "" {
					*last = id
				}
				changed()
			}
			id, message = "", false
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "event:"), strings.HasPrefix(line, "data:"):
			message = true
		}
	}
	if err := lines.Err(); err != nil {
		return true, err
	}
	return true, io.ErrUnexpectedEOF
}

// longPoll holds GET room with If-None-Match and Prefer: wait until it
// fails, calling changed after every 200. answered reports that at least
// one request was answered.
func (c *Client) longPoll(ctx context.Context, roomURL, token string, changed func()) (answered bool, err error) {
	etag := ""
	for ; ; answered = true {
		reqCtx, cancel := context.WithTimeout(ctx, 75*time.Second)
		req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, roomURL, nil)
		if err != nil {
			cancel()
			return answered, err
		}
		req.Header.Set("Authorization", "Consensus-Participant "+token)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Prefer", longPollWait)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := c.longClient().Do(req)
		if err != nil {
			cancel()
			return answered, err
		}
		status := resp.StatusCode
		if status == http.StatusOK {
			etag = resp.Header.Get("ETag")
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
		} else if status != http.StatusNotModified {
			err = apiError(resp)
		}
		resp.Body.Close()
		cancel()
		if err != nil {
			return answered, err
		}
		if status == http.StatusOK {
			changed()
		}
	}
}

// apiError reads a refusal's problem body.
func apiError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	status := resp.StatusCode
	if status == http.StatusOK {
		status = http.StatusNotAcceptable // a 200 that is not a stream
	}
	return problemError(status, b)
}
