// Command gendocs writes the generated reference documents: docs/cli.md
// from the command trees of consensus and consensusd, and
// docs/configuration.md from the settings table. `make generate` runs it
// from the repository root; tests fail when either file is stale.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/cli"
	"github.com/consensus-md/consensus/internal/cli/command"
	"github.com/consensus-md/consensus/internal/cli/consensusd"
	"github.com/consensus-md/consensus/internal/config"
)

func main() {
	dir := flag.String("o", "docs", "write the documents into `DIR`")
	flag.Parse()
	docs, err := documents()
	if err == nil {
		for name, b := range docs {
			if err = os.WriteFile(filepath.Join(*dir, name), b, 0o644); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// documents renders every generated document by file name.
func documents() (map[string][]byte, error) {
	noEnv := func(string) string { return "" }
	roots := []*cobra.Command{cli.NewCommand(cli.Env{Getenv: noEnv}), consensusd.NewCommand(consensusd.Env{Getenv: noEnv})}
	for _, r := range roots {
		command.Prepare(r)
	}
	var ref bytes.Buffer
	if err := command.Markdown(&ref, roots...); err != nil {
		return nil, err
	}
	return map[string][]byte{"cli.md": ref.Bytes(), "configuration.md": config.Markdown()}, nil
}
