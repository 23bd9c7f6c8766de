package consensusd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/cli/command"
	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/ops"
)

// healthTimeout bounds one health check, below the usual check timeouts.
const healthTimeout = 3 * time.Second

// healthcheckCommand asks the running service's operations listener: the
// check a container image without a shell or curl can run.
func healthcheckCommand(env Env) *cobra.Command {
	var ready bool
	c := &cobra.Command{
		Use:   "healthcheck",
		Short: "Ask the running service whether it is live (or ready); exit 0 if so",
		Long: `Send GET /livez (with --ready, /readyz) to the operations listener that
CONSENSUS_OPS_LISTEN names, on this host, and exit 0 when it answers 200
with a body naming consensusd (another program on that port does not
pass), 1 otherwise, saying why on stderr. Only CONSENSUS_OPS_LISTEN is read. For a
container HEALTHCHECK: the image has no shell or curl.`,
		Example: "  consensusd healthcheck\n  CONSENSUS_OPS_LISTEN=127.0.0.1:9100 consensusd healthcheck --ready",
		Args:    command.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			addr, err := config.Lookup(env.Getenv, "CONSENSUS_OPS_LISTEN")
			if err != nil {
				return err
			}
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return fmt.Errorf("CONSENSUS_OPS_LISTEN: must be host:port, got %q", addr)
			}
			path := "/livez"
			if ready {
				path = "/readyz"
			}
			return check(c.Context(), localAddr(addr), path)
		},
	}
	c.Flags().BoolVar(&ready, "ready", false, "check /readyz (the database answers and its schema is current) instead of /livez")
	return c
}

// localAddr turns a listen address into one to dial on this host: an
// unspecified host (":8079", "0.0.0.0:8079", "[::]:8079") is loopback.
func localAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

func check(ctx context.Context, addr, path string) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: CONSENSUS_OPS_LISTEN: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", path, resp.Status)
	}
	var p struct {
		Service string `json:"service"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&p); err != nil || p.Service != ops.Service {
		return fmt.Errorf("healthcheck: %s answered 200, but what listens on %s is not consensusd (its answer names no service %q); check CONSENSUS_OPS_LISTEN", path, addr, ops.Service)
	}
	return nil
}
