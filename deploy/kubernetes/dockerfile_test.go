package kubernetes_test

import (
	"bytes"
	"debug/elf"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// repoRoot is the build context of deploy/Dockerfile.
const repoRoot = "../.."

// dockerfile parses deploy/Dockerfile with BuildKit's own parser and linter
// (what `docker build --check` starts from); any warning is a failure.
func dockerfile(t *testing.T) ([]instructions.Stage, map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy/Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := parser.Parse(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Dockerfile line %d: %s", w.Location.Start.Line, w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, desc, url, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		t.Errorf("Dockerfile line %d: %s: %s", line, rule, msg)
	}})
	stages, metaArgs, err := instructions.Parse(res.AST, lint)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]string{}
	for _, a := range metaArgs {
		for _, kv := range a.Args {
			args[kv.Key] = kv.ValueString()
		}
	}
	return stages, args
}

// TestDockerfile checks the image's shape: a static build stage, a minimal
// non-root final stage, exec-form entrypoint, and a Go version that matches
// go.mod.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	stages, args := dockerfile(t)
	if len(stages) != 2 {
		t.Fatalf("want a build stage and a final stage, got %d stages", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]

	gomod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	if goLine == nil || args["GO_VERSION"] != string(goLine[1]) {
		t.Errorf("GO_VERSION=%s, go.mod says go %s", args["GO_VERSION"], goLine[1])
	}
	if !strings.HasPrefix(os.Expand(build.BaseName, func(k string) string { return args[k] }), "golang:"+args["GO_VERSION"]) {
		t.Errorf("build stage from %s, want the golang image of GO_VERSION", build.BaseName)
	}
	staticBuild := false
	for _, c := range build.Commands {
		if r, ok := c.(*instructions.RunCommand); ok {
			line := strings.Join(r.CmdLine, " ")
			if strings.Contains(line, "go build") && strings.Contains(line, "CGO_ENABLED=0") {
				staticBuild = true
			}
		}
	}
	if !staticBuild {
		t.Error("no go build with CGO_ENABLED=0 in the build stage")
	}

	if final.BaseName != "scratch" && !regexp.MustCompile(`^gcr\.io/distroless/static-debian\d+:nonroot(@sha256:[0-9a-f]{64})?$`).MatchString(final.BaseName) {
		t.Errorf("final stage from %s: want scratch or distroless static nonroot", final.BaseName)
	}
	var user *instructions.UserCommand
	var health *instructions.HealthCheckCommand
	var entry *instructions.EntrypointCommand
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c
		case *instructions.HealthCheckCommand:
			health = c
		case *instructions.EntrypointCommand:
			entry = c
		case *instructions.CopyCommand:
			if c.From != build.Name {
				t.Errorf("the final stage copies from %q: only the build stage's binaries belong there", c.From)
			}
		case *instructions.RunCommand:
			t.Error("the final stage runs a command: its base has no shell")
		}
	}
	if user == nil {
		t.Error("no USER in the final stage")
	} else if uid, err := strconv.Atoi(strings.SplitN(user.User, ":", 2)[0]); err != nil || uid == 0 {
		t.Errorf("USER %s: want a numeric non-root uid (Kubernetes checks runAsNonRoot by number)", user.User)
	}
	if health == nil {
		t.Error("no HEALTHCHECK (HEALTHCHECK NONE states there is none on purpose)")
	}
	if entry == nil || entry.PrependShell || len(entry.CmdLine) != 1 || entry.CmdLine[0] != "/usr/local/bin/consensusd" {
		t.Errorf("ENTRYPOINT must be exec form [/usr/local/bin/consensusd], got %+v", entry)
	}
}

// TestDockerBuildStage does what the build stage does, without a container
// engine: it copies the build context as .dockerignore filters it, runs the
// stage's RUN commands in it, and checks that the binaries the final stage
// copies exist, are static, and start.
func TestDockerBuildStage(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the service")
	}
	t.Parallel()
	stages, args := dockerfile(t)
	build, final := stages[0], stages[len(stages)-1]

	ctx := filepath.Join(t.TempDir(), "src")
	copyContext(t, repoRoot, ctx)
	for _, must := range []string{"go.mod", "embed.go", "openapi.json", "schemas", "web", "db/migrations", "cmd/consensusd"} {
		if _, err := os.Stat(filepath.Join(ctx, must)); err != nil {
			t.Errorf(".dockerignore leaves %s out of the build context", must)
		}
	}
	for _, never := range []string{".git", ".data", "bin"} {
		if _, err := os.Stat(filepath.Join(ctx, never)); err == nil {
			t.Errorf(".dockerignore lets %s into the build context", never)
		}
	}

	// The stage writes to /out/; here that is a directory of the test.
	out := filepath.Join(filepath.Dir(ctx), "out")
	env := append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=", "VERSION=test")
	for k, v := range args {
		env = append(env, k+"="+v)
	}
	for _, c := range build.Commands {
		switch c := c.(type) {
		case *instructions.ArgCommand:
			for _, kv := range c.Args {
				if kv.Value != nil && kv.Key != "VERSION" {
					env = append(env, kv.Key+"="+*kv.Value)
				}
			}
		case *instructions.RunCommand:
			script := strings.ReplaceAll(strings.Join(c.CmdLine, " "), "/out/", out+"/")
			cmd := exec.Command("sh", "-c", script)
			if !c.PrependShell {
				cmd = exec.Command(c.CmdLine[0], c.CmdLine[1:]...)
			}
			cmd.Dir, cmd.Env = ctx, env
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("RUN %s: %v\n%s", script, err, b)
			}
		}
	}

	for _, c := range final.Commands {
		cp, ok := c.(*instructions.CopyCommand)
		if !ok {
			continue
		}
		for _, src := range cp.SourcePaths {
			bin := strings.Replace(src, "/out/", out+"/", 1)
			f, err := elf.Open(bin)
			if err != nil {
				t.Errorf("COPY --from=%s %s: %v", cp.From, src, err)
				continue
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s is dynamically linked: the image has no libc", src)
				}
			}
			if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
				t.Errorf("%s needs %v", src, libs)
			}
			f.Close()
		}
	}

	// The binary starts with nothing but the image's environment and names
	// the setting it misses, as an operator would see it.
	cmd := exec.Command(filepath.Join(out, "consensusd"))
	cmd.Env = []string{"CONSENSUS_LISTEN=0.0.0.0:8080"}
	b, err := cmd.CombinedOutput()
	if err == nil || !regexp.MustCompile(`consensusd: [A-Z_]+: required`).Match(b) {
		t.Errorf("consensusd without configuration: %v\n%s", err, b)
	}
}

// copyContext copies the files Docker would send as the build context of src.
func copyContext(t *testing.T, src, dst string) {
	t.Helper()
	f, err := os.Open(filepath.Join(src, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	patterns, err := ignorefile.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return os.MkdirAll(dst, 0o755)
		}
		excluded, err := pm.MatchesOrParentMatches(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		if excluded {
			if d.IsDir() && !pm.Exclusions() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, target)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
