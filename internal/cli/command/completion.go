package command

import (
	"github.com/spf13/cobra"
)

// Completion returns the `completion bash|zsh|fish` command of root.
func Completion(root *cobra.Command) *cobra.Command {
	name := root.Name()
	return &cobra.Command{
		Use:   "completion SHELL",
		Short: "Print the shell completion script for bash, zsh or fish",
		Long: `Print the shell completion script for bash, zsh or fish on stdout.

bash (needs the bash-completion package):
  source <(` + name + ` completion bash)                 # this shell
  ` + name + ` completion bash > /etc/bash_completion.d/` + name + `
zsh:
  ` + name + ` completion zsh > "${fpath[1]}/_` + name + `"    # then start a new shell
fish:
  ` + name + ` completion fish > ~/.config/fish/completions/` + name + `.fish`,
		Example:   "  source <(" + name + " completion bash)\n  " + name + " completion zsh > \"${fpath[1]}/_" + name + "\"",
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return Usagef("give one shell: bash, zsh or fish")
			}
			switch args[0] {
			case "bash", "zsh", "fish":
				return nil
			}
			return Usagef("unknown shell %q: bash, zsh or fish", args[0])
		},
		RunE: func(c *cobra.Command, args []string) error {
			out := c.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			default:
				return root.GenFishCompletion(out, true)
			}
		},
	}
}
