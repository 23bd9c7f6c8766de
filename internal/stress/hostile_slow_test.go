package stress

// TestHostileInput's slow clients: headers and bodies trickled a byte at
// a time, which the server's timeouts must end.

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowClients opens raw connections that send their headers, or their
// bodies, one byte at a time, each to a route that would store something
// if the request completed. The server's timeouts must end each within
// 45 s (the service's read timeout is 30 s), never with a 2xx: a slow
// body, whose request was routed, is closed or answered with a 4xx
// problem; slow headers, which never became a request, are closed or
// answered with any 4xx (Go's server writes its own plain 400).
func slowClients(t *testing.T, f *fixture) {
	t.Helper()
	host := strings.TrimPrefix(f.base, "http://")
	// Each body is padded with legal leading whitespace so that, one byte a
	// second, it would take well over the 45 s limit to arrive.
	pad := strings.Repeat(" ", 100)
	evBody := pad + string(eventBody("comment", "slow", 1, f.a.Digest))
	evHead := "POST " + strings.TrimPrefix(f.url(f.a, "events"), f.base) + " HTTP/1.1\r\nHost: " + host +
		"\r\nAuthorization: " + participantAuth(f.a.Token) + "\r\nIdempotency-Key: slow-body-1\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(evBody)) + "\r\n\r\n"
	crBody := pad + createJSON(`"Slow"`, `"o"`, onePart)
	crHead := "POST /api/v1/admin/agreements HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + f.v.op +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(crBody)) + "\r\n\r\n"
	exBody := pad + string(exchangeBody(f.c.Inv.Secret))
	exHead := "POST " + strings.TrimPrefix(f.url(f.c, "exchange"), f.base) + " HTTP/1.1\r\nHost: " + host +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(exBody)) + "\r\n\r\n"
	slow := []struct {
		name, fast, trickle string
		problem             bool
	}{
		{"slow headers, events", "", evHead + evBody, false},
		{"slow headers, admin create", "", crHead + crBody, false},
		{"slow body, events", evHead, evBody, true},
		{"slow body, admin create", crHead, crBody, true},
		{"slow body, exchange", exHead, exBody, true},
	}
	var wg sync.WaitGroup
	for _, s := range slow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m := slowRequest(host, s.fast, s.trickle, s.problem, 45*time.Second); m != "" {
				t.Errorf("%s: %s", s.name, m)
			}
		}()
	}
	wg.Wait()
}

// slowRequest writes fast at once, then trickle one byte a second, and
// reads whatever the server answers. It returns "" when the server ended
// the request in time (closed it, or answered a 4xx — a problem when
// needProblem), or why not.
func slowRequest(host, fast, trickle string, needProblem bool, limit time.Duration) string {
	conn, err := net.DialTimeout("tcp", host, 10*time.Second)
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, fast); err != nil {
		return "writing: " + err.Error()
	}
	answered := make(chan string, 1)
	go func() {
		_ = conn.SetReadDeadline(time.Now().Add(limit))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		switch {
		case err == nil:
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			r := &reply{Status: resp.StatusCode, Header: resp.Header, Body: b, Sent: start, Received: time.Now()}
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				answered <- "answered " + r.String()
			} else if m := problemMismatch(r, resp.StatusCode, ""); needProblem && m != "" {
				answered <- m
			} else {
				answered <- ""
			}
		case isTimeout(err):
			answered <- "the server kept the connection open for " + limit.String()
		default:
			answered <- "" // closed by the server
		}
	}()
	for i := 0; i < len(trickle); i++ {
		select {
		case m := <-answered:
			return m
		case <-time.After(time.Second):
		}
		if _, err := conn.Write([]byte{trickle[i]}); err != nil {
			break // the server closed the connection
		}
		if time.Since(start) > limit {
			break
		}
	}
	return <-answered
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
