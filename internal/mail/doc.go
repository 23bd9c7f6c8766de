// Package mail composes invitation emails, keeps the durable outbox moving,
// and delivers messages over SMTP or into a Maildir.
package mail
