package config

import (
	"strings"
	"testing"
)

func TestReplySettings(t *testing.T) {
	t.Parallel()
	env := base()
	c, err := load(env)
	if err != nil || c.Reply.Enabled() {
		t.Fatalf("replies without settings: %+v, %v", c.Reply, err)
	}
	env["CONSENSUS_REPLY_ADDRESS"] = "replies@consensus.example"
	env["CONSENSUS_REPLY_IMAP_URL"] = "imaps://replies@imap.consensus.example:993/INBOX"
	env["CONSENSUS_REPLY_IMAP_PASSWORD"] = "imap-secret"
	env["CONSENSUS_DNS_RESOLVER"] = "127.0.0.1:5353"
	c, err = load(env)
	if err != nil || !c.Reply.Enabled() || c.Reply.IMAPPassword != "imap-secret" || c.Reply.DNSResolver != "127.0.0.1:5353" {
		t.Fatalf("%+v, %v", c.Reply, err)
	}
	for name, bad := range map[string]map[string]string{
		"CONSENSUS_REPLY_ADDRESS":  {"CONSENSUS_REPLY_ADDRESS": "Replies <replies@consensus.example>"},
		"CONSENSUS_REPLY_IMAP_URL": {"CONSENSUS_REPLY_IMAP_URL": ""},
		"CONSENSUS_DNS_RESOLVER":   {"CONSENSUS_DNS_RESOLVER": "127.0.0.1"},
	} {
		e := base()
		for k, v := range env {
			e[k] = v
		}
		for k, v := range bad {
			e[k] = v
		}
		if _, err := load(e); err == nil || !strings.HasPrefix(err.Error(), name+":") {
			t.Errorf("%s: %v", name, err)
		}
	}
	e := base()
	e["CONSENSUS_REPLY_ADDRESS"] = "r@consensus.example"
	e["CONSENSUS_REPLY_IMAP_URL"] = "imaps://r:pw@imap.example/INBOX"
	if _, err := load(e); err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("a password in the URL: %v", err)
	}
}
