// Package command runs the cobra command trees of both binaries, consensus
// and consensusd, with the habits they share: help on stdout before any
// other work, one-line errors, exit codes (0 ok, 1 runtime failure, 2
// usage), "did you mean" suggestions, a version from the build information,
// shell completion, and the Markdown reference in docs/cli.md.
package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit statuses.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	// ExitUnreadable: a verify command could not read or parse its input,
	// so nothing was checked (1 is kept for a check that failed).
	ExitUnreadable = 3
	// ExitUnauthenticated: verify record found nothing wrong but checked
	// no service signature (no --keys), so nothing was authenticated.
	ExitUnauthenticated = 4
)

// StatusError is a runtime failure with an exit status of its own (see
// ExitUnreadable); its message is printed like any runtime failure's.
type StatusError struct {
	Status int
	Err    error
}

func (e *StatusError) Error() string { return e.Err.Error() }
func (e *StatusError) Unwrap() error { return e.Err }

// UsageError is a mistake in the command line: exit status 2, with the
// usage of the command it happened in.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ErrReported is returned by a command that has already written its
// diagnostics to stderr: exit status 1 and nothing more is printed.
var ErrReported = errors.New("failure already reported")

// runtimeError marks an error returned by a command's RunE: whatever cobra
// itself returns (unknown command or flag, bad arguments) is a usage error.
type runtimeError struct{ err error }

func (e *runtimeError) Error() string { return e.err.Error() }
func (e *runtimeError) Unwrap() error { return e.err }

// Prepare sets the shared help, usage, version and error behaviour on a
// command tree; Execute calls it, and so does the docs generator, which
// must see the tree as users do. Calling it twice is harmless.
func Prepare(root *cobra.Command) {
	root.SilenceErrors, root.SilenceUsage = true, true
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(flagError)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { _, _ = io.WriteString(c.OutOrStdout(), helpText(c)) })
	root.SetUsageFunc(func(c *cobra.Command) error { _, err := io.WriteString(c.OutOrStderr(), usageText(c)); return err })
	if root.Version == "" {
		root.Version = Version(root.Name()).Short()
	}
	root.SetVersionTemplate(Version(root.Name()).String())
	if !hasCommand(root, "version") {
		root.AddCommand(versionCommand(root.Name()))
	}
	if !hasCommand(root, "help") {
		root.SetHelpCommand(helpCommand(root))
		root.InitDefaultHelpCmd()
	}
	walk(root, func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		c.InitDefaultVersionFlag()
		if c.RunE != nil && c.Annotations["command.wrapped"] == "" {
			run := c.RunE
			c.RunE = func(c *cobra.Command, args []string) error {
				err := run(c, args)
				var ue *UsageError
				if err == nil || errors.As(err, &ue) || errors.Is(err, ErrReported) {
					return err
				}
				return &runtimeError{err}
			}
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations["command.wrapped"] = "yes"
		}
	})
}

func hasCommand(c *cobra.Command, name string) bool {
	for _, sub := range c.Commands() {
		if sub.Name() == name {
			return true
		}
	}
	return false
}

// listed reports whether help lists c: every available command, and the
// help command (which cobra counts as unavailable).
func listed(c *cobra.Command) bool {
	return c.IsAvailableCommand() || (c.Name() == "help" && !c.Hidden)
}

// walk calls fn on c and every command below it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// Execute runs root with args (never os.Args) and returns the exit status.
// Errors go to stderr as one line prefixed with the binary's name; a usage
// error adds the usage of the command it happened in.
func Execute(ctx context.Context, root *cobra.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	Prepare(root)
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, ErrReported) {
		return ExitFailure
	}
	var rt *runtimeError
	if errors.As(err, &rt) {
		fmt.Fprintln(stderr, root.Name()+": "+Describe(rt.err))
		var se *StatusError
		if errors.As(rt.err, &se) {
			return se.Status
		}
		return ExitFailure
	}
	if cmd == nil {
		cmd = root
	}
	fmt.Fprintf(stderr, "%s: %s\n\n", cmd.CommandPath(), oneLine(err.Error()))
	_, _ = io.WriteString(stderr, usageText(cmd))
	return ExitUsage
}

// oneLine keeps the first line of a message (cobra's own suggestions come
// on later lines; ours are inline).
func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// flagError turns pflag's parse errors into usage errors, with a
// suggestion for a mistyped flag name.
func flagError(c *cobra.Command, err error) error {
	var notExist *pflag.NotExistError
	var invalid *pflag.InvalidValueError
	switch {
	case errors.As(err, &notExist) && notExist.GetSpecifiedShortnames() == "":
		name := notExist.GetSpecifiedName()
		msg := "unknown flag --" + name
		if s := suggestFlag(c, name); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
		return &UsageError{Msg: msg}
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		reason := "invalid value"
		var ue *UsageError
		switch {
		case errors.As(invalid, &ue):
			reason = ue.Msg
		case f.Value.Type() == "int":
			reason = "must be a whole number"
		}
		return Usagef("--%s: %s, got %q", f.Name, reason, invalid.GetValue())
	}
	return &UsageError{Msg: err.Error()}
}

// suggestFlag names the flag of c closest to the mistyped name, or "".
func suggestFlag(c *cobra.Command, name string) string {
	best, bestD := "", 3
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := distance(strings.ToLower(name), f.Name)
		if strings.HasPrefix(f.Name, name) && len(name) >= 2 {
			d = 1
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// unknownCommand is the usage error for a word that names no subcommand of
// c, with cobra's suggestions.
func unknownCommand(c *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q", word)
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	if s := c.SuggestionsFor(word); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return &UsageError{Msg: msg}
}

// Group is the RunE of a command that only holds subcommands: without one
// it is a usage error naming them, "help" prints its help, and any other
// word is an unknown command.
func Group(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		var names []string
		for _, sub := range c.Commands() {
			if listed(sub) {
				names = append(names, sub.Name())
			}
		}
		return Usagef("missing command: one of %s", strings.Join(names, ", "))
	}
	if args[0] == "help" && len(args) == 1 {
		return c.Help()
	}
	return unknownCommand(c, args[0])
}

// NoArgs accepts no positional argument; on a command with subcommands a
// stray word is reported as an unknown command.
func NoArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if c.HasAvailableSubCommands() {
		return unknownCommand(c, args[0])
	}
	return Usagef("unexpected argument %q", args[0])
}

// Args accepts exactly the named positional arguments, naming the first
// missing one or the first extra one.
func Args(names ...string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < len(names) {
			return Usagef("missing %s", names[len(args)])
		}
		if len(args) > len(names) {
			return Usagef("unexpected argument %q", args[len(names)])
		}
		return nil
	}
}

// AnyGroupArgs accepts every word, leaving the checks to Group.
func AnyGroupArgs(*cobra.Command, []string) error { return nil }

func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND...]",
		Short: "Show the help of a command",
		Long:  "Show the help of a command: the same text as COMMAND --help.",
		Example: "  " + root.Name() + " help\n" +
			"  " + root.Name() + " help " + firstSubcommand(root),
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				word := strings.Join(args, " ")
				if len(rest) > 0 {
					word = rest[0]
				}
				if target == nil {
					target = root
				}
				return unknownCommand(target, word)
			}
			return target.Help()
		},
	}
}

func firstSubcommand(root *cobra.Command) string {
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() && c.Name() != "help" && c.Name() != "version" {
			return c.Name()
		}
	}
	return "version"
}
