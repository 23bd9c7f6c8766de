package parked

import (
	"net/http"
)

// holdRequest is what a held read's handler does with the Listener (as
// httpapi's detachHold does, without its request accounting): it takes
// r's connection from net/http and holds it, or returns nil when it
// cannot (nil l, not HTTP/1.1, no epoll set), and the handler answers.
func holdRequest(l *Listener, w http.ResponseWriter, r *http.Request) *Held {
	if l == nil || r.ProtoMajor != 1 || r.ProtoMinor < 1 || !CanWatch() {
		return nil
	}
	header := w.Header().Clone()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil
	}
	return l.Hold(conn, header, !r.Close && brw.Reader.Buffered() == 0, func() {})
}
