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
	b.WriteString("failure (a first line on stderr naming what failed; a refusal from the service adds its\n")
	b.WriteString("detail, the field at fault and the request id on indented lines below it), 2 a usage\n")
	b.WriteString("error (one line, then the command's usage). The `verify` commands also use 1 for a check\n")
	b.WriteString("that failed, 3 for an input they could not read or parse (nothing was checked) and, for\n")
	b.WriteString("`verify record` without `--keys`, 4 for a consistent record that nothing authenticated\n")
	b.WriteString("(`--allow-unauthenticated` makes that 0). Credentials never come from flags: the\n")
	b.WriteString("environment, a `_FILE` variable or `--token-file`.\n\n")
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
