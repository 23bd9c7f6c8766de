//go:build !linux

package httpapi

import "net"

// watchHangup has no shared watcher outside Linux: onHangup reads.
func watchHangup(net.Conn, func()) (func(), bool) { return nil, false }
