package kubernetes_test

// TestPolicy's checks of what selects what: Services, the PDB, the
// NetworkPolicy, the ServiceMonitor, and the documented apply order.

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

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
