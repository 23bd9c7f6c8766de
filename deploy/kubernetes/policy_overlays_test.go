package kubernetes_test

// TestProductionOverlays: what only a deployable overlay must have.

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestProductionOverlays checks what only a deployable overlay must have: a
// real image reference, an https origin, and, with CloudNativePG, the
// database secret the operator generates.
func TestProductionOverlays(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"overlays/production", "overlays/cloudnativepg"} {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			m := index(render(t, filesys.MakeFsOnDisk(), dir))
			d := m.deployment(t)
			image := d.Spec.Template.Spec.Containers[0].Image
			if image == "consensus" || !strings.Contains(image, "/") || strings.HasSuffix(image, ":latest") || !(strings.Contains(image, "@sha256:") || regexp.MustCompile(`:[^/]+$`).MatchString(image)) {
				t.Errorf("image %q: want a registry path with a version tag or digest", image)
			}
			cfg := m.config(t)
			u, err := url.Parse(cfg["CONSENSUS_PUBLIC_ORIGIN"])
			if err != nil || u.Scheme != "https" || u.Host == "" {
				t.Errorf("CONSENSUS_PUBLIC_ORIGIN=%q: production needs https://", cfg["CONSENSUS_PUBLIC_ORIGIN"])
			}
			if mu, err := url.Parse(cfg["CONSENSUS_MAIL_URL"]); err != nil || (mu.Scheme != "smtp" && mu.Scheme != "smtps") {
				t.Errorf("CONSENSUS_MAIL_URL=%q: production mails over smtp:// or smtps://", cfg["CONSENSUS_MAIL_URL"])
			} else if _, hasPassword := mu.User.Password(); hasPassword {
				t.Error("CONSENSUS_MAIL_URL carries a password: it belongs in the smtp-password secret")
			}
			for _, cidr := range strings.Split(cfg["CONSENSUS_TRUSTED_PROXIES"], ",") {
				if _, _, err := net.ParseCIDR(strings.TrimSpace(cidr)); err != nil {
					t.Errorf("CONSENSUS_TRUSTED_PROXIES: %q is not a CIDR", cidr)
				}
			}
			var ns int
			for _, o := range m.objs {
				if o.gvk.Kind == "Namespace" {
					ns++
					var n corev1.Namespace
					_ = json.Unmarshal(o.raw, &n)
					if n.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
						t.Errorf("Namespace/%s does not enforce the restricted Pod Security Standard", n.Name)
					}
				}
			}
			if ns != 1 {
				t.Errorf("want the overlay to create its namespace, got %d Namespace objects", ns)
			}
			if dir != "overlays/cloudnativepg" {
				return
			}
			var clusters []map[string]any
			for _, o := range m.objs {
				if o.gvk.Group == "postgresql.cnpg.io" && o.gvk.Kind == "Cluster" {
					var c map[string]any
					_ = json.Unmarshal(o.raw, &c)
					clusters = append(clusters, c)
				}
			}
			if len(clusters) != 1 {
				t.Fatalf("want one CloudNativePG Cluster, got %d", len(clusters))
			}
			c := clusters[0]
			spec := c["spec"].(map[string]any)
			if spec["instances"] != float64(3) {
				t.Errorf("Cluster instances: want 3, got %v", spec["instances"])
			}
			// The superuser installs the audit guard at bootstrap, from a
			// ConfigMap of the overlay holding the event triggers.
			initdb, _ := spec["bootstrap"].(map[string]any)["initdb"].(map[string]any)
			refs, _ := initdb["postInitApplicationSQLRefs"].(map[string]any)["configMapRefs"].([]any)
			guarded := false
			for _, r := range refs {
				ref, _ := r.(map[string]any)
				key, _ := ref["key"].(string)
				for _, cm := range m.configMaps {
					if cm.Name == ref["name"] && strings.Contains(cm.Data[key], "CREATE EVENT TRIGGER consensus_audit_guard_end") {
						guarded = true
					}
				}
			}
			if !guarded {
				t.Error("the Cluster does not install the audit guard at bootstrap (postInitApplicationSQLRefs)")
			}
			// R-HA-FAILOVER: a commit waits for a standby, even when none is
			// healthy, and a failover promotes only a standby that holds it.
			sync, _ := spec["postgresql"].(map[string]any)["synchronous"].(map[string]any)
			if sync == nil || sync["number"] == nil || sync["number"].(float64) < 1 || sync["dataDurability"] != "required" || sync["failoverQuorum"] != true {
				t.Errorf("Cluster postgresql.synchronous %v: want number ≥ 1, dataDurability required and failoverQuorum true", sync)
			}
			if params, _ := spec["postgresql"].(map[string]any)["parameters"].(map[string]any); params["synchronous_commit"] != nil && params["synchronous_commit"] != "on" && params["synchronous_commit"] != "remote_apply" {
				t.Errorf("Cluster synchronous_commit %v: a commit must wait for its standby", params["synchronous_commit"])
			}
			// Only the read-write service: no replica can reach a standby.
			services, _ := spec["managed"].(map[string]any)["services"].(map[string]any)
			if d := fmt.Sprint(services["disabledDefaultServices"]); d != "[ro r]" && d != "[r ro]" {
				t.Errorf("Cluster managed.services.disabledDefaultServices %s: want ro and r disabled, only the -rw service", d)
			}
			// CloudNativePG writes the owner's credentials, uri included, to
			// <cluster>-app; both the replicas and the Job must read it.
			want := c["metadata"].(map[string]any)["name"].(string) + "-app"
			for _, w := range m.workloads() {
				if got := secretOf(*w.spec, "database"); got != want {
					t.Errorf("%s reads the database URL from secret %q, want %q", w.name, got, want)
				}
				if got := envValue(w.spec.Containers[0], "DATABASE_URL_FILE"); path.Base(got) != "uri" {
					t.Errorf("%s DATABASE_URL_FILE=%q: want the uri key of %s", w.name, got, want)
				}
			}
		})
	}
}
