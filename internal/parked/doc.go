// Package parked keeps an HTTP/1.1 server's waiting connections outside
// net/http, so that a replica holds thousands of held requests (issue 30's
// listeners) without net/http's goroutines and buffers for each.
//
// Its Listener is the listener net/http serves on. A held request's
// handler takes its connection from net/http (Hijack) and gives it to
// Listener.Hold; the answer is written on the connection (held.go), which
// then waits, parked in one epoll set per process (hangup_linux.go), for
// the client's next request. That request is served here when it is
// another held read (serve.go: a GET over HTTP/1.1 without a body, read
// by a head reader that FuzzParkedRequest holds to net/http's own, under
// the server's base context); anything else goes back to net/http with
// every byte read of it (listener.go). The listener also gathers the
// writes of an answer of stated length into one writev (gather.go) and
// admits new connections a bounded number at a time (admission.go).
//
// Elsewhere than Linux, and over HTTP/2, held requests wait in their
// handlers; so they do when CONSENSUS_PARKED_CONNECTIONS is off and the
// server serves on its plain listener.
package parked
