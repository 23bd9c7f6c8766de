// Package live keeps a replica's waiting readers (held requests and open
// streams, SPEC R-LIVE) and wakes those of an agreement when it changes. It
// holds no room state and does no I/O: the store's listener tells it what
// changed on any replica, and each woken reader checks again for itself
// with its own credential, while the room itself is read once for all of
// them (Hub.OnRoomChanged). While nothing changes, a waiter costs a channel
// and a map entry, never database work.
package live
