package kubernetes_test

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
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

func secretOf(spec corev1.PodSpec, volume string) string {
	for _, v := range spec.Volumes {
		if v.Name == volume && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}
