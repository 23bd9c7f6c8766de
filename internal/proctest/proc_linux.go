//go:build linux

package proctest

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the child die with the test process, so a test binary
// killed by its timeout leaves no consensusd behind.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
