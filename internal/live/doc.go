// Package live keeps a replica's waiting readers (held requests and open
// streams) and wakes those of an agreement when it changes. It holds no
// room state: the store's listener tells it what changed on any replica,
// and each woken reader checks again for itself with its own credential,
// while the room itself is read once for all of them (Hub.OnRoomChanged).
// While nothing changes, a waiter costs a channel and a map entry, never
// database work. Workspaces does the same for the readers of a whole
// workspace (the console's lists); its only I/O is the Resolver that names
// an announced agreement's workspace, called only while such a reader
// waits.
package live
