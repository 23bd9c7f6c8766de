// Command consensus is the Consensus command line: operator commands
// (admin), an invited agent's runtime (agent), verification of digests
// and artifacts (verify).
package main

import (
	"os"

	"github.com/consensus-md/consensus/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.Env{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin}))
}
