// Package servertest starts consensusd in-process on 127.0.0.1:0, the one
// way the end-to-end tests, the agent runtime's end-to-end test and
// consensus-demo run the real daemon.
//
// Start runs the daemon against a database the caller names (it needs no
// test, so consensus-demo uses it) and returns a Server whose Client checks
// every request and response against the published openapi.json through
// internal/contract. New is the testing wrapper: a fresh pgtest database,
// violations failing the test, and Close at cleanup.
//
// A Server delivers mail to a Maildir (the default) or over SMTP to an
// in-process mailsink that files each message into IMAP mailboxes. It keeps
// the daemon's JSON log in memory (Logs), runs on a Clock a test can
// advance, and ReplicaOptions start a second replica on the same database,
// public origin, mail drop and keys.
package servertest
