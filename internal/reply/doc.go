// Package reply reads the replies to invitation emails from an IMAP
// mailbox and turns each into a decision or a comment: the reply's address
// names its invitation by a keyed tag, its DKIM signature proves the
// invited address sent it, and only its new text, above the quoted
// history, is read. Only a message so proven is acted on and answered
// (venue.Reply, in one transaction); any other is ignored unanswered. One
// replica reads at a time (an advisory lock); a message leaves the inbox
// only after its result is committed.
package reply
