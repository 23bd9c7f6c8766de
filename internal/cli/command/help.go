package command

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// FooterAnnotation is the cobra annotation whose text help prints after the
// flags (consensusd lists its settings there).
const FooterAnnotation = "command.footer"

// helpText is what -h/--help prints on stdout: the description, then the
// usage with examples.
func helpText(c *cobra.Command) string {
	var b strings.Builder
	desc := strings.TrimSpace(c.Long)
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(&b, "%s\n\n", desc)
	b.WriteString(usageLines(c))
	if c.HasExample() {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	b.WriteString(commandsAndFlags(c))
	if footer := c.Annotations[FooterAnnotation]; footer != "" {
		fmt.Fprintf(&b, "\n%s", footer)
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\nRun '%s COMMAND --help' for the help of a command.\n", c.CommandPath())
	}
	return b.String()
}

// usageText is what a usage error prints on stderr after its one line: the
// usage of that command only, without the description and examples.
func usageText(c *cobra.Command) string {
	return usageLines(c) + commandsAndFlags(c) +
		fmt.Sprintf("\nRun '%s --help' for more.\n", c.CommandPath())
}

func usageLines(c *cobra.Command) string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	fmt.Fprintf(&b, "  %s\n", c.UseLine())
	if len(c.Aliases) > 0 {
		fmt.Fprintf(&b, "\nAliases:\n  %s\n", c.NameAndAliases())
	}
	return b.String()
}

func commandsAndFlags(c *cobra.Command) string {
	var b strings.Builder
	if c.HasAvailableSubCommands() {
		b.WriteString("\nCommands:\n")
		width := 0
		for _, sub := range c.Commands() {
			if listed(sub) {
				width = max(width, len(sub.Name()))
			}
		}
		for _, sub := range c.Commands() {
			if listed(sub) {
				fmt.Fprintf(&b, "  %-*s  %s\n", width, sub.Name(), sub.Short)
			}
		}
	}
	if c.HasAvailableLocalFlags() {
		fmt.Fprintf(&b, "\nFlags:\n%s", c.LocalFlags().FlagUsagesWrapped(0))
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(&b, "\nGlobal flags:\n%s", c.InheritedFlags().FlagUsagesWrapped(0))
	}
	return b.String()
}
