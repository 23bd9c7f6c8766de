// Command consensusd is the Consensus service. `consensusd` migrates and
// serves; `consensusd migrate` only applies pending migrations. Settings come
// from the environment (see README.md).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/consensus-md/consensus/internal/config"
	"github.com/consensus-md/consensus/internal/daemon"
	"github.com/consensus-md/consensus/internal/store"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "consensusd:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, args []string) error {
	if len(args) == 1 && args[0] == "migrate" {
		url := os.Getenv("DATABASE_URL")
		if url == "" {
			return fmt.Errorf("DATABASE_URL: required")
		}
		return store.Migrate(ctx, url)
	}
	if len(args) > 0 {
		return fmt.Errorf("usage: consensusd [migrate]")
	}
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return err
	}
	cfg.Version = version
	return daemon.Run(ctx, cfg, log, daemon.Options{})
}
