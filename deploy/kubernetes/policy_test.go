package kubernetes_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// opsPort is where consensusd serves /livez, /readyz and /metrics
// (CONSENSUS_OPS_LISTEN); httpPort is the API.
const (
	opsPort  = 9090
	httpPort = 8080
)

// manifests is one rendered kustomization, indexed for the checks.
type manifests struct {
	objs        []object
	deployments []*appsv1.Deployment
	jobs        []*batchv1.Job
	services    []*corev1.Service
	configMaps  []*corev1.ConfigMap
	pdbs        []*policyv1.PodDisruptionBudget
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	netpols     []*networkingv1.NetworkPolicy
	monitors    []*monitoringv1.ServiceMonitor
}

func index(objs []object) *manifests {
	m := &manifests{objs: objs}
	for _, o := range objs {
		switch v := o.typed.(type) {
		case *appsv1.Deployment:
			m.deployments = append(m.deployments, v)
		case *batchv1.Job:
			m.jobs = append(m.jobs, v)
		case *corev1.Service:
			m.services = append(m.services, v)
		case *corev1.ConfigMap:
			m.configMaps = append(m.configMaps, v)
		case *policyv1.PodDisruptionBudget:
			m.pdbs = append(m.pdbs, v)
		case *autoscalingv2.HorizontalPodAutoscaler:
			m.hpas = append(m.hpas, v)
		case *networkingv1.NetworkPolicy:
			m.netpols = append(m.netpols, v)
		case *monitoringv1.ServiceMonitor:
			m.monitors = append(m.monitors, v)
		}
	}
	return m
}

// workload is a pod template and who owns it, for checks that hold for every
// pod the manifests can start.
type workload struct {
	name string
	spec *corev1.PodSpec
	meta map[string]string
}

func (m *manifests) workloads() []workload {
	var w []workload
	for _, d := range m.deployments {
		w = append(w, workload{"Deployment/" + d.Name, &d.Spec.Template.Spec, d.Spec.Template.Labels})
	}
	for _, j := range m.jobs {
		w = append(w, workload{"Job/" + j.Name, &j.Spec.Template.Spec, j.Spec.Template.Labels})
	}
	return w
}

func (m *manifests) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	if len(m.deployments) != 1 {
		t.Fatalf("want one Deployment, got %d", len(m.deployments))
	}
	return m.deployments[0]
}

func (m *manifests) job(t *testing.T) *batchv1.Job {
	t.Helper()
	if len(m.jobs) != 1 {
		t.Fatalf("want one Job (the migration), got %d", len(m.jobs))
	}
	return m.jobs[0]
}

// config is the service's settings: the one ConfigMap the Deployment's
// container reads its environment from (the CloudNativePG overlay has
// another, the audit guard its Cluster runs at bootstrap).
func (m *manifests) config(t *testing.T) map[string]string {
	t.Helper()
	var names []string
	for _, f := range m.deployment(t).Spec.Template.Spec.Containers[0].EnvFrom {
		if f.ConfigMapRef != nil {
			names = append(names, f.ConfigMapRef.Name)
		}
	}
	if len(names) != 1 {
		t.Fatalf("want the container's environment from one ConfigMap, got %v", names)
	}
	for _, c := range m.configMaps {
		if c.Name == names[0] {
			return c.Data
		}
	}
	t.Fatalf("no ConfigMap %s", names[0])
	return nil
}

// TestPolicy checks, in every kustomization, what docs/operations.md
// promises about the manifests.
func TestPolicy(t *testing.T) {
	t.Parallel()
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			m := index(render(t, filesys.MakeFsOnDisk(), dir))
			t.Run("no secret values", func(t *testing.T) { checkNoSecrets(t, m) })
			t.Run("restricted pods", func(t *testing.T) { checkPodSecurity(t, m) })
			t.Run("secrets as files", func(t *testing.T) { checkSecretFiles(t, m) })
			t.Run("deployment", func(t *testing.T) { checkDeployment(t, m) })
			t.Run("migration job", func(t *testing.T) { checkMigrationJob(t, m) })
			t.Run("selectors", func(t *testing.T) { checkSelectors(t, m) })
			t.Run("apply order", func(t *testing.T) { checkApplyOrder(t, m) })
		})
	}
}

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

func envNames(c corev1.Container) map[string]bool {
	names := map[string]bool{}
	for _, e := range c.Env {
		names[e.Name] = true
	}
	return names
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// containerPort resolves a probe's or service's port (a number or a name) in
// the container.
func containerPort(c corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return -1
}

func checkDeployment(t *testing.T, m *manifests) {
	d := m.deployment(t)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas: want 3, got %v", d.Spec.Replicas)
	}
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 || ru.MaxUnavailable.Type != intstr.Int {
		t.Errorf("strategy: want RollingUpdate with maxUnavailable 0, got %+v", d.Spec.Strategy)
	}
	if ru != nil && (ru.MaxSurge == nil || ru.MaxSurge.IntValue() < 1) {
		t.Error("maxSurge must be at least 1 when maxUnavailable is 0, or a rollout cannot progress")
	}
	spec := d.Spec.Template.Spec
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		t.Error("enableServiceLinks must be false: the Service named consensus would inject CONSENSUS_* variables")
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	c := spec.Containers[0]
	probes := []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"startupProbe", c.StartupProbe, "/livez"}, {"livenessProbe", c.LivenessProbe, "/livez"}, {"readinessProbe", c.ReadinessProbe, "/readyz"}}
	for _, p := range probes {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: want an HTTP probe", p.name)
			continue
		}
		if got := containerPort(c, p.probe.HTTPGet.Port); got != opsPort {
			t.Errorf("%s targets port %d, want the ops port %d", p.name, got, opsPort)
		}
		if p.probe.HTTPGet.Path != p.path {
			t.Errorf("%s path %s, want %s", p.name, p.probe.HTTPGet.Path, p.path)
		}
	}
	if got := containerPort(c, intstr.FromString("http")); got != httpPort {
		t.Errorf("container port http is %d, want %d", got, httpPort)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		t.Error("no preStop pause: load balancers would still send requests to a stopping pod")
	} else if grace := spec.TerminationGracePeriodSeconds; grace == nil || c.Lifecycle.PreStop.Sleep == nil || *grace <= c.Lifecycle.PreStop.Sleep.Seconds+30 {
		t.Error("terminationGracePeriodSeconds must exceed the preStop pause by the shutdown grace period (30 s)")
	}
	// The listen addresses in the configuration match the container ports,
	// and the ops listener is reachable from the kubelet (not loopback).
	cfg := m.config(t)
	for setting, want := range map[string]int{"CONSENSUS_LISTEN": httpPort, "CONSENSUS_OPS_LISTEN": opsPort} {
		host, port, err := net.SplitHostPort(cfg[setting])
		if err != nil || port != strconv.Itoa(want) {
			t.Errorf("%s=%q: want port %d", setting, cfg[setting], want)
		}
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			t.Errorf("%s=%q listens on loopback: probes and Services cannot reach it", setting, cfg[setting])
		}
	}
	if cfg["CONSENSUS_ENV"] != "production" {
		t.Errorf("CONSENSUS_ENV=%q, want production", cfg["CONSENSUS_ENV"])
	}

	// HPA, PDB and Service agree with the Deployment.
	if len(m.hpas) != 1 {
		t.Fatalf("want one HorizontalPodAutoscaler, got %d", len(m.hpas))
	}
	h := m.hpas[0]
	if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != d.Name {
		t.Errorf("HPA targets %s/%s, not the Deployment", h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < *d.Spec.Replicas || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
		t.Errorf("HPA min %v max %d: the floor must be the Deployment's %d replicas", h.Spec.MinReplicas, h.Spec.MaxReplicas, *d.Spec.Replicas)
	}
	if len(m.pdbs) != 1 {
		t.Fatalf("want one PodDisruptionBudget, got %d", len(m.pdbs))
	}
	if mu := m.pdbs[0].Spec.MaxUnavailable; mu == nil || mu.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable: want 1, got %v", mu)
	}
}

// The migration Job runs `consensusd migrate` from the same image, against the
// same database secret, as the replicas.
func checkMigrationJob(t *testing.T, m *manifests) {
	d, j := m.deployment(t), m.job(t)
	jc, dc := j.Spec.Template.Spec.Containers[0], d.Spec.Template.Spec.Containers[0]
	if jc.Image != dc.Image {
		t.Errorf("Job image %s differs from the Deployment's %s", jc.Image, dc.Image)
	}
	if len(jc.Command) != 0 || strings.Join(jc.Args, " ") != "migrate" {
		t.Errorf("Job runs command %v args %v, want the image's consensusd with args [migrate]", jc.Command, jc.Args)
	}
	if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Error("Job restartPolicy: want Never (backoffLimit retries)")
	}
	if j.Labels["app.kubernetes.io/component"] != "migrate" {
		t.Error("the Job lacks app.kubernetes.io/component=migrate, which the upgrade commands select it by")
	}
	if got, want := envValue(jc, "DATABASE_URL_FILE"), envValue(dc, "DATABASE_URL_FILE"); got == "" || got != want {
		t.Errorf("Job DATABASE_URL_FILE %q, Deployment %q", got, want)
	}
	if got, want := secretOf(j.Spec.Template.Spec, "database"), secretOf(d.Spec.Template.Spec, "database"); got == "" || got != want {
		t.Errorf("Job reads database secret %q, Deployment %q", got, want)
	}
	for name := range envNames(jc) {
		if name != "DATABASE_URL_FILE" {
			t.Errorf("the Job gets %s: migrating needs the database and nothing else", name)
		}
	}
}

func secretOf(spec corev1.PodSpec, volume string) string {
	for _, v := range spec.Volumes {
		if v.Name == volume && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}

// Services, the PDB, the NetworkPolicy and the ServiceMonitor select exactly
// what they mean to: the API pods and never the migration Job's pod.
func checkSelectors(t *testing.T, m *manifests) {
	d, j := m.deployment(t), m.job(t)
	server, migrate := labels.Set(d.Spec.Template.Labels), labels.Set(j.Spec.Template.Labels)
	sel, err := labelsSelector(d.Spec.Selector.MatchLabels)
	if err != nil || !sel.Matches(server) {
		t.Error("the Deployment's selector does not match its own pods")
	}
	if sel.Matches(migrate) {
		t.Error("the Deployment's selector matches the migration Job's pods")
	}
	svcByName := map[string]*corev1.Service{}
	for _, s := range m.services {
		svcByName[s.Name] = s
		sel := labels.SelectorFromSet(s.Spec.Selector)
		if len(s.Spec.Selector) == 0 || !sel.Matches(server) || sel.Matches(migrate) {
			t.Errorf("Service/%s does not select exactly the API pods", s.Name)
		}
		for _, p := range s.Spec.Ports {
			if containerPort(d.Spec.Template.Spec.Containers[0], p.TargetPort) < 0 {
				t.Errorf("Service/%s port %s targets %s, which the container does not have", s.Name, p.Name, p.TargetPort.String())
			}
		}
	}
	for _, p := range m.pdbs {
		sel, err := labelsSelector(p.Spec.Selector.MatchLabels)
		if err != nil || !sel.Matches(server) || sel.Matches(migrate) {
			t.Errorf("PodDisruptionBudget/%s does not select exactly the API pods", p.Name)
		}
	}
	covered := map[string]bool{}
	for _, np := range m.netpols {
		sel, err := labelsSelector(np.Spec.PodSelector.MatchLabels)
		if err != nil || len(np.Spec.PodSelector.MatchLabels) == 0 {
			t.Errorf("NetworkPolicy/%s selects every pod in the namespace", np.Name)
			continue
		}
		if sel.Matches(server) {
			covered["server"] = true
		}
		if sel.Matches(migrate) {
			covered["migrate"] = true
		}
	}
	if !covered["server"] || !covered["migrate"] {
		t.Errorf("NetworkPolicies cover %v: both the API pods and the migration Job need one", covered)
	}
	if len(m.monitors) != 1 {
		t.Fatalf("want one ServiceMonitor, got %d", len(m.monitors))
	}
	sm := m.monitors[0]
	var scraped []*corev1.Service
	for _, s := range m.services {
		if labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(s.Labels)) {
			scraped = append(scraped, s)
		}
	}
	if len(scraped) != 1 {
		t.Fatalf("the ServiceMonitor selects %d Services, want exactly the ops Service", len(scraped))
	}
	for _, ep := range sm.Spec.Endpoints {
		found := false
		for _, p := range scraped[0].Spec.Ports {
			if p.Name == ep.Port && containerPort(d.Spec.Template.Spec.Containers[0], p.TargetPort) == opsPort {
				found = true
			}
		}
		if !found || ep.Path != "/metrics" {
			t.Errorf("ServiceMonitor endpoint %q %s does not scrape /metrics on the ops port", ep.Port, ep.Path)
		}
	}
	if api := svcByName["consensus"]; api != nil {
		for _, p := range api.Spec.Ports {
			if containerPort(d.Spec.Template.Spec.Containers[0], p.TargetPort) == opsPort {
				t.Error("the API Service exposes the ops port: /metrics would be reachable through the ingress")
			}
		}
	} else {
		t.Error("no Service named consensus")
	}
}

// The documented apply order is: everything without
// app.kubernetes.io/component=server, wait for the migration Job, then the
// rest. That works only if the server label marks the API pods' Deployment and
// Service and nothing the Job needs.
func checkApplyOrder(t *testing.T, m *manifests) {
	var server []string
	for _, o := range m.objs {
		var meta struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(o.raw, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Metadata.Labels["app.kubernetes.io/component"] == "server" {
			server = append(server, o.String())
		}
	}
	sort.Strings(server)
	if strings.Join(server, " ") != "Deployment/consensus Service/consensus" {
		t.Errorf("objects labelled component=server: %v, want exactly the Deployment and the API Service", server)
	}
}

func labelsSelector(ml map[string]string) (labels.Selector, error) {
	if len(ml) == 0 {
		return labels.Nothing(), nil
	}
	return labels.SelectorFromSet(ml), nil
}

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
