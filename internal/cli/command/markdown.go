package command

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Markdown writes the reference of every available command of the given
// trees (prepared with Prepare) as one Markdown document: docs/cli.md.
func Markdown(w io.Writer, roots ...*cobra.Command) error {
	var b strings.Builder
	b.WriteString("<!-- Generated from the command trees by `make generate`; do not edit. -->\n\n")
	b.WriteString("# Command-line reference\n\n")
	b.WriteString("Every command answers `-h`/`--help` with this text. Exit status: 0 success, 1 a runtime\n")
	b.WriteString("failure (one line on stderr naming what failed), 2 a usage error (one line, then the\n")
	b.WriteString("command's usage). Credentials never come from flags: the environment, a `_FILE`\n")
	b.WriteString("variable or `--token-file`.\n\n")
	for _, root := range roots {
		walk(root, func(c *cobra.Command) {
			if listed(c) || !c.HasParent() {
				fmt.Fprintf(&b, "- [`%s`](#%s)\n", c.CommandPath(), anchor(c.CommandPath()))
			}
		})
	}
	for _, root := range roots {
		walk(root, func(c *cobra.Command) {
			if !listed(c) && c.HasParent() {
				return
			}
			level := strings.Repeat("#", min(2+strings.Count(c.CommandPath(), " "), 4))
			fmt.Fprintf(&b, "\n%s %s\n\n", level, c.CommandPath())
			fmt.Fprintf(&b, "```text\n%s```\n", helpText(c))
		})
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// anchor is GitHub's heading anchor for a command path.
func anchor(path string) string { return strings.ReplaceAll(path, " ", "-") }
