package kubernetes_test

// TestPolicy's checks of pods and secrets: no secret values shipped, the
// restricted Pod Security Standard, secrets read as files.

import (
	"path"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Secrets are created by the operator or by CloudNativePG, never shipped.
func checkNoSecrets(t *testing.T, m *manifests) {
	for _, o := range m.objs {
		if o.gvk.Kind == "Secret" {
			t.Errorf("Secret/%s is in the manifests: reference secrets the operator creates instead", o.name)
		}
	}
	secretish := regexp.MustCompile(`(^|_)(DATABASE_URL|TOKEN|KEY|PASSWORD|SECRET)(_|$)`)
	for _, w := range m.workloads() {
		for _, c := range append(w.spec.InitContainers, w.spec.Containers...) {
			for _, e := range c.Env {
				if secretish.MatchString(e.Name) && !strings.HasSuffix(e.Name, "_FILE") && e.ValueFrom == nil {
					t.Errorf("%s container %s: %s has a literal value; use %s_FILE with a mounted secret", w.name, c.Name, e.Name, e.Name)
				}
			}
		}
	}
	for _, cm := range m.configMaps {
		for k := range cm.Data {
			if secretish.MatchString(k) && !strings.HasSuffix(k, "_FILE") {
				t.Errorf("ConfigMap/%s holds %s: secrets belong in a Secret", cm.Name, k)
			}
		}
	}
}

// Every pod meets the restricted Pod Security Standard, and every container
// has requests and limits.
func checkPodSecurity(t *testing.T, m *manifests) {
	if len(m.workloads()) == 0 {
		t.Fatal("no workloads")
	}
	for _, w := range m.workloads() {
		ps := w.spec.SecurityContext
		if w.spec.AutomountServiceAccountToken == nil || *w.spec.AutomountServiceAccountToken {
			t.Errorf("%s mounts a service account token it never uses", w.name)
		}
		if w.spec.HostNetwork || w.spec.HostPID || w.spec.HostIPC {
			t.Errorf("%s shares a host namespace", w.name)
		}
		for _, v := range w.spec.Volumes {
			if v.HostPath != nil {
				t.Errorf("%s mounts hostPath %s", w.name, v.Name)
			}
		}
		for _, c := range append(w.spec.InitContainers, w.spec.Containers...) {
			where := w.name + " container " + c.Name
			sc := c.SecurityContext
			if sc == nil {
				t.Errorf("%s has no securityContext", where)
				continue
			}
			nonRoot := sc.RunAsNonRoot
			if nonRoot == nil && ps != nil {
				nonRoot = ps.RunAsNonRoot
			}
			if nonRoot == nil || !*nonRoot {
				t.Errorf("%s: runAsNonRoot is not true", where)
			}
			uid := sc.RunAsUser
			if uid == nil && ps != nil {
				uid = ps.RunAsUser
			}
			if uid != nil && *uid == 0 {
				t.Errorf("%s runs as uid 0", where)
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s: readOnlyRootFilesystem is not true", where)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: allowPrivilegeEscalation is not false", where)
			}
			if sc.Privileged != nil && *sc.Privileged {
				t.Errorf("%s is privileged", where)
			}
			if sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) > 0 {
				t.Errorf("%s: capabilities must drop ALL and add none, got %+v", where, sc.Capabilities)
			}
			seccomp := sc.SeccompProfile
			if seccomp == nil && ps != nil {
				seccomp = ps.SeccompProfile
			}
			if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("%s: seccompProfile is not RuntimeDefault", where)
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := c.Resources.Limits[r]; !ok {
					t.Errorf("%s has no %s limit", where, r)
				}
				if _, ok := c.Resources.Requests[r]; !ok {
					t.Errorf("%s has no %s request", where, r)
				}
			}
		}
	}
}

// Every *_FILE setting names a file inside a read-only mount of a Secret
// volume, and the settings of the five secrets are all present on the
// replicas.
func checkSecretFiles(t *testing.T, m *manifests) {
	for _, w := range m.workloads() {
		secretVolumes := map[string]bool{}
		for _, v := range w.spec.Volumes {
			if v.Secret != nil {
				secretVolumes[v.Name] = true
				if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode&0o007 != 0 {
					t.Errorf("%s volume %s: secret files must not be world-readable", w.name, v.Name)
				}
			}
		}
		for _, c := range w.spec.Containers {
			for _, e := range c.Env {
				if !strings.HasSuffix(e.Name, "_FILE") {
					continue
				}
				ok := false
				for _, vm := range c.VolumeMounts {
					if secretVolumes[vm.Name] && vm.ReadOnly && path.Dir(e.Value) == vm.MountPath {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s container %s: %s=%s is not a file in a read-only Secret mount", w.name, c.Name, e.Name, e.Value)
				}
			}
		}
	}
	d := m.deployment(t)
	have := envNames(d.Spec.Template.Spec.Containers[0])
	for _, name := range []string{"DATABASE_URL_FILE", "CONSENSUS_OPERATOR_TOKEN_FILE", "CONSENSUS_TOKEN_KEY_FILE", "CONSENSUS_SIGNING_KEY_FILE", "CONSENSUS_SMTP_PASSWORD_FILE"} {
		if !have[name] {
			t.Errorf("the replicas do not set %s", name)
		}
	}
}
