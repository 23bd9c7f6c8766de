package parked

import "net"

// OnHangup calls gone, once, when the client of conn closes it or sends
// anything: a stream's client sends nothing after its request, so either
// means it left. The returned stop ends the watch; call it before closing
// conn. On Linux one epoll set watches every detached stream's connection,
// read by one goroutine (hangup_linux.go), so a waiting stream costs no
// goroutine blocked in a read; elsewhere, and when the set cannot take the
// connection, a goroutine reads.
func OnHangup(conn net.Conn, gone func()) (stop func()) {
	if stop, ok := watchConn(conn, func(bool) { gone() }); ok {
		return stop
	}
	go func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		gone()
	}()
	return func() {}
}
