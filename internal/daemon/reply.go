package daemon

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/reply"
	"github.com/consensus-md/consensus/internal/secret"
	"github.com/consensus-md/consensus/internal/store"
	"github.com/consensus-md/consensus/internal/venue"
)

// replyReader is the reader of the reply mailbox, nil when replies are
// not configured.
func replyReader(cfg *config.Config, st *store.Store, v *venue.Venue, keys *secret.Keys, log *slog.Logger, poll time.Duration) (*reply.Reader, error) {
	if !cfg.Reply.Enabled() {
		return nil, nil
	}
	imapCfg, err := reply.NewIMAPConfig(cfg.Reply.IMAPURL, cfg.Reply.IMAPPassword)
	if err != nil {
		return nil, fmt.Errorf("CONSENSUS_REPLY_IMAP_URL: %w", err)
	}
	return &reply.Reader{Venue: v, Store: st, Keys: keys, IMAP: imapCfg, Address: cfg.Reply.Address,
		Lookup: reply.Resolver(cfg.Reply.DNSResolver), Log: log, Poll: poll}, nil
}
