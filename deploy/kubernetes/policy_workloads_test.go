package kubernetes_test

// TestPolicy's checks of the replicas' Deployment and the migration Job.

import (
	"net"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

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
