//go:build !linux

package parked

import "net"

// CanWatch: there is no shared watcher outside Linux. OnHangup reads
// instead, and held requests stay in net/http.
func CanWatch() bool { return false }

func watchConn(net.Conn, func(bool)) (func(), bool) { return nil, false }
