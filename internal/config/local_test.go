package config

import (
	"strings"
	"testing"
	"time"
)

func localEnv(extra map[string]string) func(string) string {
	m := map[string]string{
		"CONSENSUS_ENV": "local", "DATABASE_URL": "postgres:///x", "CONSENSUS_MAIL_URL": "maildir:///tmp/m",
		"CONSENSUS_OPERATOR_TOKEN": strings.Repeat("o", 30), "CONSENSUS_TOKEN_KEY": strings.Repeat("ab", 32),
	}
	for k, v := range extra {
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

func TestOutboxPoll(t *testing.T) {
	t.Parallel()
	c, err := Load(localEnv(nil))
	if err != nil || c.OutboxPoll != time.Second {
		t.Fatalf("default: %v, %v", c, err)
	}
	c, err = Load(localEnv(map[string]string{"CONSENSUS_OUTBOX_POLL": "20ms"}))
	if err != nil || c.OutboxPoll != 20*time.Millisecond {
		t.Fatalf("20ms: %v", err)
	}
	for _, bad := range []string{"soon", "0s", "-1s", "2h"} {
		_, err := Load(localEnv(map[string]string{"CONSENSUS_OUTBOX_POLL": bad}))
		if err == nil || !strings.HasPrefix(err.Error(), "CONSENSUS_OUTBOX_POLL:") {
			t.Errorf("%q: error %v should name CONSENSUS_OUTBOX_POLL", bad, err)
		}
	}
}

func TestListenPortZero(t *testing.T) {
	t.Parallel()
	if _, err := Load(localEnv(map[string]string{"CONSENSUS_LISTEN": "127.0.0.1:0"})); err != nil {
		t.Fatal(err)
	}
}
