package kubernetes_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// TestValidationRefusesMistakes proves the checks have teeth: each manifest
// below has one mistake of the kind kustomize passes through silently and a
// cluster would prune, ignore or reject only at apply time.
func TestValidationRefusesMistakes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, manifest, want string
	}{
		{"misspelt field", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: c
          image: i
          securityContext: {runAsNonRot: true}
`, "runAsNonRot"},
		{"field name in the wrong case", `
apiVersion: v1
kind: Service
metadata: {name: x}
spec:
  Ports: [{port: 80}]
`, "Ports"},
		{"duplicate field", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"x"},"automountServiceAccountToken":true,"automountServiceAccountToken":false}`,
			"duplicate field"},
		{"wrong type", `
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: x}
spec: {maxUnavailable: [1]}
`, "maxUnavailable"},
		{"unknown metadata field", `
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: x, label: {a: b}}
spec:
  selector: {matchLabels: {a: b}}
  endpoints: [{port: ops}]
`, "label"},
		{"ServiceMonitor field misspelt", `
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: x}
spec:
  selector: {matchLabels: {a: b}}
  endpoints: [{port: ops, intervall: 30s}]
`, "intervall"},
		{"ServiceMonitor value outside the CRD's pattern", `
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: x}
spec:
  selector: {matchLabels: {a: b}}
  endpoints: [{port: ops, interval: 30 seconds}]
`, "interval"},
		{"PrometheusRule rule misplaced", `
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: x}
spec:
  groups:
    - name: g
      alerts: [{alert: A, expr: up == 0}]
`, "alerts"},
		{"Cluster field misspelt", `
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: x}
spec:
  instances: 3
  storage: {sise: 1Gi}
`, "sise"},
		{"Cluster without a required field", `
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: x}
spec:
  instances: 3
  postgresql: {synchronous: {method: any}}
  storage: {size: 1Gi}
`, "number"},
		{"Cluster value outside an enum", `
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: x}
spec:
  instances: 3
  postgresql: {synchronous: {method: all, number: 1}}
  storage: {size: 1Gi}
`, "method"},
		{"Cluster breaking a CEL rule", `
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: x}
spec:
  instances: 3
  imageName: postgres:17
  imageCatalogRef: {apiGroup: postgresql.cnpg.io, kind: ImageCatalog, name: c, major: 17}
  storage: {size: 1Gi}
`, "mutually exclusive"},
		{"kind nobody checks", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: x}
`, "no Go type or CRD schema"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			raw, err := yaml.YAMLToJSON([]byte(c.manifest))
			if strings.HasPrefix(c.manifest, "{") {
				raw, err = []byte(c.manifest), nil
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = validate(t, raw)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error does not name %q:\n%v", c.want, err)
			}
		})
	}
}

// TestKustomizePassesTyposThrough shows why the strict decode is needed: a
// patch with a misspelt field renders without complaint, and only the check
// refuses it.
func TestKustomizePassesTyposThrough(t *testing.T) {
	t.Parallel()
	fs := filesys.MakeFsInMemory()
	base, err := os.ReadDir("base")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range base {
		b, err := os.ReadFile(filepath.Join("base", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.WriteFile("/k/base/"+e.Name(), b); err != nil {
			t.Fatal(err)
		}
	}
	overlay := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../base]
patches:
  - patch: |-
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: consensus}
      spec:
        template:
          spec:
            containers:
              - name: consensusd
                securityContext: {readOnlyRootFileSystem: true}
`
	if err := fs.WriteFile("/k/typo/kustomization.yaml", []byte(overlay)); err != nil {
		t.Fatal(err)
	}
	_, errs := build(t, fs, "/k/typo")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "readOnlyRootFileSystem") {
		t.Fatalf("want one error naming readOnlyRootFileSystem, got %v", errs)
	}
}
