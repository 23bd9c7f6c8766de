//go:build !linux

package httpapi

import "net"

// canWatch: there is no shared watcher outside Linux. onHangup reads
// instead, and held requests stay in net/http.
func canWatch() bool { return false }

func watchConn(net.Conn, func(bool)) (func(), bool) { return nil, false }
