package config

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strings"
)

// Reply holds the settings of deciding by replying to an invitation email.
// Address empty turns the feature off: invitations carry no Reply-To and no
// mailbox is read.
type Reply struct {
	// Address is the reply mailbox, local@domain; each invitation's
	// Reply-To is local+tag@domain.
	Address string
	// IMAPURL is the mailbox the replies arrive in
	// (imaps://user@host:993/INBOX).
	IMAPURL string
	// IMAPPassword logs in to IMAPURL.
	IMAPPassword string
	// DNSResolver (host:port), when set, answers the DKIM key lookups
	// instead of the system resolver.
	DNSResolver string
}

// Enabled reports whether replies are read.
func (r Reply) Enabled() bool { return r.Address != "" }

// replyTagLen is the length of a reply tag (secret.ReplyTag), which the
// local part of the reply address must leave room for.
const replyTagLen = 42

var replySettings = []Setting{
	{
		Name: "CONSENSUS_REPLY_ADDRESS",
		Doc:  "The mailbox (`local@domain`) a participant may reply to in order to decide or comment; each invitation's `Reply-To` is `local+tag@domain`, the tag a keyed MAC of the invitation. Unset: invitations carry no `Reply-To` and no mailbox is read. Requires `CONSENSUS_REPLY_IMAP_URL`.",
		parse: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			a, err := mail.ParseAddress(v)
			if err != nil || a.Name != "" || a.Address != v {
				return fmt.Errorf("CONSENSUS_REPLY_ADDRESS: must be a bare address such as replies@example.org, got %q", v)
			}
			local, domain, _ := strings.Cut(v, "@")
			if strings.Contains(local, "+") || domain == "" || len(local)+1+replyTagLen > 64 {
				return fmt.Errorf("CONSENSUS_REPLY_ADDRESS: the local part must hold no + and be at most %d characters (the tag takes the rest of 64), got %q", 64-1-replyTagLen, v)
			}
			c.Reply.Address = v
			return nil
		},
	},
	{
		Name: "CONSENSUS_REPLY_IMAP_URL",
		Doc:  "The IMAP mailbox the replies arrive in: `imaps://user@host:993/INBOX` (implicit TLS), `imap://…` (STARTTLS) or, to a loopback host only, `imap+plain://…`. Read with IDLE when the server offers it, by one replica at a time.",
		parse: func(c *Config, v string) error {
			if v == "" {
				if c.Reply.Address != "" {
					return errors.New("CONSENSUS_REPLY_IMAP_URL: required when CONSENSUS_REPLY_ADDRESS is set")
				}
				return nil
			}
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "imaps" && u.Scheme != "imap" && u.Scheme != "imap+plain") || u.Host == "" || u.User == nil {
				return errors.New("CONSENSUS_REPLY_IMAP_URL: must be imaps://user@host[:port]/MAILBOX, imap://… or imap+plain://… (loopback only)")
			}
			if _, ok := u.User.Password(); ok {
				return errors.New("CONSENSUS_REPLY_IMAP_URL: put the password in CONSENSUS_REPLY_IMAP_PASSWORD, not in the URL")
			}
			c.Reply.IMAPURL = v
			return nil
		},
	},
	{
		Name: "CONSENSUS_REPLY_IMAP_PASSWORD", Secret: true,
		Doc:   "The password of the reply mailbox.",
		parse: func(c *Config, v string) error { c.Reply.IMAPPassword = v; return nil },
	},
	{
		Name: "CONSENSUS_DNS_RESOLVER",
		Doc:  "A DNS server (`host:port`) asked for the DKIM keys of replies instead of the system resolver.",
		parse: func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			if _, _, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("CONSENSUS_DNS_RESOLVER: must be host:port, got %q", v)
			}
			c.Reply.DNSResolver = v
			return nil
		},
	},
}
