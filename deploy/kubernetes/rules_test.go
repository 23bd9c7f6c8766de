package kubernetes_test

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"text/template"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	promql "github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// templateFuncs stands in for the functions Prometheus offers alert
// templates, so a misspelt one fails to parse here as it would there.
var templateFuncs = func() template.FuncMap {
	m := template.FuncMap{}
	for _, name := range []string{
		"query", "first", "label", "value", "strvalue", "args", "reReplaceAll", "safeHtml",
		"match", "title", "toUpper", "toLower", "graphLink", "tableLink", "sortByLabel",
		"stripPort", "stripDomain", "humanize", "humanize1024", "humanizeDuration",
		"humanizePercentage", "humanizeTimestamp", "toTime", "toDuration", "pathPrefix",
		"externalURL", "parseDuration", "now",
	} {
		m[name] = func(...any) any { return nil }
	}
	return m
}()

// TestAlertRules parses every rule's PromQL and templates, and checks that
// each alert says how bad it is and what it means.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	parser := promql.NewParser(promql.Options{})
	m := render(t, filesys.MakeFsOnDisk(), "overlays/production")
	var rules []*monitoringv1.PrometheusRule
	for _, o := range m {
		if r, ok := o.typed.(*monitoringv1.PrometheusRule); ok {
			rules = append(rules, r)
		}
	}
	if len(rules) != 1 {
		t.Fatalf("want one PrometheusRule, got %d", len(rules))
	}
	alerts := map[string]bool{}
	metrics := map[string]bool{}
	for _, g := range rules[0].Spec.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			if (r.Alert == "") == (r.Record == "") {
				t.Errorf("group %s: a rule must be exactly one of alert or record", g.Name)
			}
			expr, err := parser.ParseExpr(r.Expr.String())
			if err != nil {
				t.Errorf("%s: expr does not parse: %v", name, err)
				continue
			}
			promql.Inspect(expr, func(n promql.Node, _ []promql.Node) error {
				if vs, ok := n.(*promql.VectorSelector); ok && strings.HasPrefix(vs.Name, "consensus_") {
					metrics[strings.TrimSuffix(vs.Name, "_bucket")] = true
				}
				return nil
			})
			if r.Alert == "" {
				continue
			}
			if alerts[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			alerts[r.Alert] = true
			if expr.Type() != promql.ValueTypeVector {
				t.Errorf("%s: an alert expression must be an instant vector, got %s", name, expr.Type())
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", name, s)
			}
			if r.For != nil {
				if _, err := model.ParseDuration(string(*r.For)); err != nil {
					t.Errorf("%s: for: %v", name, err)
				}
			}
			for _, a := range []string{"summary", "description"} {
				text := r.Annotations[a]
				if strings.TrimSpace(text) == "" {
					t.Errorf("%s: no %s", name, a)
				}
				// Prometheus defines these variables before every template.
				const prelude = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
				if _, err := template.New(name).Funcs(templateFuncs).Parse(prelude + text); err != nil {
					t.Errorf("%s: %s template: %v", name, a, err)
				}
				if kept, known := outputLabels(expr); known {
					for _, l := range labelRef.FindAllStringSubmatch(text, -1) {
						if !kept[l[1]] {
							t.Errorf("%s: %s uses $labels.%s, which the expression aggregates away", name, a, l[1])
						}
					}
				}
			}
		}
	}
	// docs/operations.md explains every series the alerts rely on, so the
	// metrics work and the rules stay in step.
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range metrics {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !strings.Contains(string(doc), "`"+n) {
			t.Errorf("docs/operations.md does not describe %s, which an alert uses", n)
		}
	}
	for _, a := range sortedKeys(alerts) {
		if !strings.Contains(string(doc), a) {
			t.Errorf("docs/operations.md does not explain alert %s", a)
		}
	}
}

var labelRef = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)

// outputLabels tells which labels the result of e carries, when an
// aggregation decides it (known false: whatever the selected series have).
func outputLabels(e promql.Expr) (map[string]bool, bool) {
	switch e := e.(type) {
	case *promql.ParenExpr:
		return outputLabels(e.Expr)
	case *promql.AggregateExpr:
		if e.Without {
			return nil, false
		}
		kept := map[string]bool{}
		for _, l := range e.Grouping {
			kept[l] = true
		}
		return kept, true
	case *promql.BinaryExpr:
		// Comparisons with a number, and vector matches without group
		// modifiers or with group_left, keep the labels of the vector on
		// the left; group_right keeps those of the vector on the right.
		if _, ok := e.LHS.(*promql.NumberLiteral); ok {
			return outputLabels(e.RHS)
		}
		if e.VectorMatching != nil && e.VectorMatching.Card == promql.CardOneToMany {
			return outputLabels(e.RHS)
		}
		return outputLabels(e.LHS)
	case *promql.Call:
		if e.Func.Name == "histogram_quantile" && len(e.Args) == 2 {
			kept, known := outputLabels(e.Args[1])
			delete(kept, "le")
			return kept, known
		}
	}
	return nil, false
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
