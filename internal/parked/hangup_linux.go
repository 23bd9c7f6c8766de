package parked

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// hangups is the process's epoll set of the connections taken from
// net/http (detached streams, held requests, and their connections waiting
// for the client's next request), level-triggered and one-shot: each
// connection reports once, when its client closes it (EPOLLRDHUP, EPOLLHUP)
// or sends a byte (EPOLLIN). Entries carry an id of their own, not the
// descriptor, so a descriptor reused after a close can never reach another
// connection's callback.
var hangups struct {
	once sync.Once
	fd   int // -1 when the set could not be made
	mu   sync.Mutex
	next uint32
	gone map[uint32]func(hup bool)
}

// CanWatch reports whether the epoll set can watch connections: without
// it, Hold cannot be used, and held requests wait in their handlers.
func CanWatch() bool {
	hangups.once.Do(startHangups)
	return hangups.fd >= 0
}

// watchConn calls report, once, from the set's goroutine, when conn's
// client sends anything (hup false) or closes it (hup true). The returned
// stop ends the watch; call it before closing conn or reading from it. A
// TLS connection is watched on its socket.
func watchConn(conn net.Conn, report func(hup bool)) (func(), bool) {
	if !CanWatch() {
		return nil, false
	}
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, false
	}
	hangups.mu.Lock()
	id := hangups.next
	for hangups.gone[id] != nil {
		id++
	}
	hangups.next = id + 1
	hangups.gone[id] = report
	hangups.mu.Unlock()
	var added error
	err = raw.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: int32(id)}
		added = unix.EpollCtl(hangups.fd, unix.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err = errors.Join(err, added); err != nil {
		forgetHangup(id)
		return nil, false
	}
	return func() {
		forgetHangup(id)
		_ = raw.Control(func(fd uintptr) { _ = unix.EpollCtl(hangups.fd, unix.EPOLL_CTL_DEL, int(fd), nil) })
	}, true
}

// forgetHangup removes id and returns its callback, if still there.
func forgetHangup(id uint32) func(bool) {
	hangups.mu.Lock()
	defer hangups.mu.Unlock()
	gone := hangups.gone[id]
	delete(hangups.gone, id)
	return gone
}

func startHangups() {
	hangups.gone = map[uint32]func(bool){}
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		hangups.fd = -1
		return
	}
	hangups.fd = fd
	go func() {
		events := make([]unix.EpollEvent, 64)
		for {
			n, err := unix.EpollWait(fd, events, -1)
			if err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				return
			}
			for _, ev := range events[:n] {
				if report := forgetHangup(uint32(ev.Fd)); report != nil {
					report(ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0)
				}
			}
		}
	}()
}
