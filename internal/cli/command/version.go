package command

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// BuildInfo is what a binary knows about its own build, from
// runtime/debug.ReadBuildInfo: `go build` and `go install` stamp it, so no
// linker flags are needed.
type BuildInfo struct {
	Name      string // the binary: consensus or consensusd
	Module    string // module path
	Version   string // module version: a tag, a pseudo-version, or (devel)
	Revision  string // VCS revision, "" when built outside a checkout
	Time      string // VCS commit time, RFC 3339
	Modified  bool   // the checkout had uncommitted changes
	GoVersion string
	Platform  string // GOOS/GOARCH
}

// Stamp names the source of a build made without its git checkout (a
// container build copies the tree without .git, so Go cannot stamp a
// revision). deploy/Dockerfile sets it with
// -ldflags "-X github.com/consensus-md/consensus/internal/cli/command.Stamp=…";
// it stands in for the revision only when the build information has none.
var Stamp string

// Version reads the build information of the running binary.
func Version(name string) BuildInfo {
	v := BuildInfo{Name: name, Version: "(unknown)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		v.Revision = Stamp
		return v
	}
	v.Module, v.GoVersion = bi.Main.Path, bi.GoVersion
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	if v.Revision == "" && Stamp != "" {
		v.Revision = Stamp
	}
	return v
}

// Short is the one-word version the service reports (health endpoint,
// logs): the module version, else the first 12 characters of the
// revision, else "dev".
func (v BuildInfo) Short() string {
	switch {
	case v.Version != "" && v.Version != "(devel)" && v.Version != "(unknown)":
		return v.Version
	case v.Revision != "":
		return v.Revision[:min(12, len(v.Revision))]
	}
	return "dev"
}

// String is what --version and the version command print.
func (v BuildInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", v.Name, v.Version)
	if v.Revision != "" {
		modified := ""
		if v.Modified {
			modified = " (with uncommitted changes)"
		}
		fmt.Fprintf(&b, "  revision %s%s\n", v.Revision, modified)
		if v.Time != "" {
			fmt.Fprintf(&b, "  commit time %s\n", v.Time)
		}
	} else {
		b.WriteString("  revision unknown (built outside a git checkout)\n")
	}
	fmt.Fprintf(&b, "  built with %s %s\n", v.GoVersion, v.Platform)
	return b.String()
}

func versionCommand(name string) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version, VCS revision and Go version of this build",
		Long:    "Print the module version, the VCS revision and commit time, and the Go version this binary was built from (the same as --version).",
		Example: "  " + name + " version\n  " + name + " --version",
		Args:    NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(c.OutOrStdout(), Version(name).String())
			return err
		},
	}
}
