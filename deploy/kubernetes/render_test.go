// Package kubernetes_test checks what deploy/ ships. It renders every
// kustomization under this directory with the kustomize library and checks
// each object strictly: built-in kinds decode into their k8s.io/api types with
// unknown fields refused, custom resources validate against their published
// CRD schemas, alert rules parse as PromQL, and the policies
// docs/operations.md promises hold. It also checks deploy/Dockerfile (BuildKit's
// parser and linter, then its build stage run without an engine) and
// deploy/systemd (systemd-analyze where installed). It lives in its own Go
// module so the service's module never depends on these libraries.
package kubernetes_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// kustomizations is every directory an operator may build or apply. Each
// must render and pass every check; a new overlay is added here.
var kustomizations = []string{"base", "overlays/production", "overlays/cloudnativepg"}

// render builds dir the way `kubectl kustomize dir` does and validates every
// object it yields; any error fails the test.
func render(t *testing.T, fs filesys.FileSystem, dir string) []object {
	t.Helper()
	objs, errs := build(t, fs, dir)
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	if len(objs) == 0 {
		t.Fatalf("%s rendered no objects", dir)
	}
	return objs
}

// build renders dir and validates each object, returning the valid objects
// and one error per failure.
func build(t *testing.T, fs filesys.FileSystem, dir string) ([]object, []error) {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, dir)
	if err != nil {
		return nil, []error{fmt.Errorf("kustomize build %s: %w", dir, err)}
	}
	var objs []object
	var errs []error
	for _, r := range m.Resources() {
		raw, err := r.MarshalJSON()
		if err == nil {
			var o object
			if o, err = validate(t, raw); err == nil {
				objs = append(objs, o)
				continue
			}
		}
		errs = append(errs, fmt.Errorf("%s: %s %s:\n%w", dir, r.GetKind(), r.GetName(), err))
	}
	return objs, errs
}

// TestPinnedVersions fails when a dependency update moves the libraries whose
// versions go.mod names on purpose.
func TestPinnedVersions(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"sigs.k8s.io/kustomize/api": "v0.21.2", "sigs.k8s.io/kustomize/kyaml": "v0.21.2",
		"k8s.io/api": "v0.37.2", "k8s.io/apimachinery": "v0.37.2",
	}
	args := []string{"list", "-m", "-f", "{{.Path}} {{.Version}}"}
	for p := range want {
		args = append(args, p)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		p, v, _ := strings.Cut(line, " ")
		if want[p] != v {
			t.Errorf("%s is %s, want %s (see go.mod)", p, v, want[p])
		}
	}
}

func TestKustomizationsRenderAndValidate(t *testing.T) {
	t.Parallel()
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			objs := render(t, filesys.MakeFsOnDisk(), dir)
			t.Logf("%d objects: %s", len(objs), sortedKinds(objs))
		})
	}
}
