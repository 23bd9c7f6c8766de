// Command consensusd is the Consensus service. `consensusd` migrates and
// serves; `consensusd migrate` only applies pending migrations; `consensusd
// config check` prints the effective configuration. Settings come from the
// environment: `consensusd --help` lists them.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/consensus-md/consensus/internal/cli/consensusd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := consensusd.Main(ctx, os.Args[1:], consensusd.Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	stop()
	os.Exit(code)
}
