package kubernetes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The custom resources the manifests use are checked against the CRDs their
// projects publish, read from the Go modules those projects release (the Go
// module cache holds the whole module, CRD YAML included; nothing is copied
// into this repository). Raising a version here re-checks the manifests
// against the newer schema.
var crdSources = []struct {
	module, version, file string
}{
	// The Prometheus Operator's CRDs, at the release whose Go types
	// (pkg/apis/monitoring, in go.mod) also decode ServiceMonitor and
	// PrometheusRule strictly.
	{"github.com/prometheus-operator/prometheus-operator", "v0.85.0", "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"},
	{"github.com/prometheus-operator/prometheus-operator", "v0.85.0", "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml"},
	// CloudNativePG: only the CRD (its Go API package pulls in the operator).
	{"github.com/cloudnative-pg/cloudnative-pg", "v1.30.1", "config/crd/bases/postgresql.cnpg.io_clusters.yaml"},
}

// scheme knows every built-in kind the manifests may contain, plus the
// Prometheus Operator's kinds, whose Go types are a light dependency.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme, monitoringv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// strictDecoder refuses unknown and duplicate fields, and matches field names
// case-sensitively (unlike encoding/json).
var strictDecoder = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme,
	kjson.SerializerOptions{Strict: true})

// crdSchema is one served version of a CRD, ready to validate objects the way
// the API server does: prune (here: refuse) unknown fields, default, then
// OpenAPI, list-type and CEL validation.
type crdSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

var (
	crdOnce    sync.Once
	crdSchemas map[schema.GroupVersionKind]*crdSchema
	crdErr     error
)

func loadCRDs(t *testing.T) map[schema.GroupVersionKind]*crdSchema {
	t.Helper()
	crdOnce.Do(func() { crdSchemas, crdErr = readCRDs() })
	if crdErr != nil {
		t.Fatal(crdErr)
	}
	return crdSchemas
}

func readCRDs() (map[schema.GroupVersionKind]*crdSchema, error) {
	out := map[schema.GroupVersionKind]*crdSchema{}
	dirs := map[string]string{}
	for _, src := range crdSources {
		key := src.module + "@" + src.version
		dir, ok := dirs[key]
		if !ok {
			var err error
			if dir, err = moduleDir(key); err != nil {
				return nil, err
			}
			dirs[key] = dir
		}
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(src.file)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			return nil, fmt.Errorf("%s %s: %w", key, src.file, err)
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			var internal apiextensionsinternal.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				return nil, fmt.Errorf("%s %s: %w", crd.Name, v.Name, err)
			}
			structural, err := structuralschema.NewStructural(&internal)
			if err != nil {
				return nil, fmt.Errorf("%s %s: structural schema: %w", crd.Name, v.Name, err)
			}
			validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", crd.Name, v.Name, err)
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			out[gvk] = &crdSchema{structural, validator, cel.NewValidator(structural, true, celconfig.PerCallLimit)}
		}
	}
	return out, nil
}

// moduleDir returns where the Go module cache holds module@version,
// downloading it through the module proxy (checksum-verified) on first use.
func moduleDir(modVersion string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", modVersion)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr == nil && info.Error != "" {
		return "", fmt.Errorf("go mod download %s: %s", modVersion, info.Error)
	}
	if err != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %v %s", modVersion, err, stderr.String())
	}
	return info.Dir, nil
}

// object is one rendered manifest: its kind, name and JSON, and the decoded Go
// value for built-in and Prometheus Operator kinds (nil for other CRDs).
type object struct {
	gvk   schema.GroupVersionKind
	name  string
	raw   []byte
	typed runtime.Object
}

func (o object) String() string { return o.gvk.Kind + "/" + o.name }

// validate decodes raw strictly into its Go type where there is one and checks
// custom resources against their CRD. An object of a kind neither knows is an
// error: nothing reaches a cluster unchecked.
func validate(t *testing.T, raw []byte) (object, error) {
	t.Helper()
	var tm metav1.TypeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return object{}, err
	}
	gvk := tm.GroupVersionKind()
	var meta struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &meta)
	o := object{gvk: gvk, name: meta.Metadata.Name, raw: raw}
	var errs []error
	known := false
	if scheme.Recognizes(gvk) {
		known = true
		typed, _, err := strictDecoder.Decode(raw, nil, nil)
		if err != nil {
			errs = append(errs, err)
		}
		o.typed = typed
	}
	if crd, ok := loadCRDs(t)[gvk]; ok {
		known = true
		errs = append(errs, crd.check(raw)...)
	}
	if !known {
		errs = append(errs, fmt.Errorf("no Go type or CRD schema for %s: add one to the test before using the kind", gvk))
	}
	return o, errors.Join(errs...)
}

// check validates a custom resource as the API server would on create, except
// that unknown fields, which the server silently prunes, are errors here.
func (c *crdSchema) check(raw []byte) []error {
	// As the API server does: whole numbers become int64, not float64
	// (CEL rules and integer formats depend on it).
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return []error{err}
	}
	var errs []error
	// metadata is not part of a CRD's schema; the server checks it as
	// ObjectMeta, so decode it strictly into that.
	if md, ok := obj["metadata"]; ok {
		b, _ := json.Marshal(md)
		var om metav1.ObjectMeta
		strict, err := sigsjson.UnmarshalStrict(b, &om, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
		for _, e := range append(strict, err) {
			if e != nil {
				errs = append(errs, fmt.Errorf("metadata: %w", e))
			}
		}
	}
	copied := runtime.DeepCopyJSON(obj)
	unknown := pruning.PruneWithOptions(copied, c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	for _, p := range unknown {
		errs = append(errs, fmt.Errorf("unknown field %q", p))
	}
	defaulting.Default(obj, c.structural)
	for _, e := range apiservervalidation.ValidateCustomResource(nil, obj, c.validator) {
		errs = append(errs, e)
	}
	for _, e := range listtype.ValidateListSetsAndMaps(nil, c.structural, obj) {
		errs = append(errs, e)
	}
	if c.cel != nil {
		celErrs, _ := c.cel.Validate(context.Background(), nil, c.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		for _, e := range celErrs {
			errs = append(errs, e)
		}
	}
	return errs
}

// sortedKinds is for messages: the kinds present, in a stable order.
func sortedKinds(objs []object) string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.String())
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}
