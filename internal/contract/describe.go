package contract

import (
	"errors"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// describe renders an error from kin-openapi without any value: reasons,
// JSON locations, keywords and property names only.
func describe(err error) string {
	var parts []string
	collect(err, &parts)
	return strings.Join(parts, "; ")
}

func collect(err error, out *[]string) {
	switch e := err.(type) {
	case nil:
	case *openapi3filter.RequestError:
		prefix := e.Reason
		if prefix == "" {
			prefix = "invalid"
		}
		if e.Parameter != nil {
			prefix = fmt.Sprintf("%s parameter %q: %s", e.Parameter.In, e.Parameter.Name, e.Reason)
		} else if e.RequestBody != nil {
			prefix = "request body: " + e.Reason
		}
		if prefix == "" {
			prefix = "request"
		}
		*out = append(*out, prefix)
		collect(e.Err, out)
	case *openapi3filter.ResponseError:
		*out = append(*out, e.Reason)
		collect(e.Err, out)
	case *openapi3filter.SecurityRequirementsError:
		*out = append(*out, "security requirements not met")
	case *openapi3.SchemaError:
		if e.Origin != nil {
			collect(e.Origin, out)
			return
		}
		var verr *jsonschema.ValidationError
		if errors.As(e, &verr) {
			collectValidation(verr, out)
			return
		}
		*out = append(*out, "at /"+strings.Join(e.JSONPointer(), "/")+": fails "+e.SchemaField)
	case openapi3.MultiError:
		for _, x := range e {
			collect(x, out)
		}
	case *routers.RouteError:
		*out = append(*out, e.Reason)
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			collect(x, out)
		}
	case interface{ Unwrap() error }:
		if inner := e.Unwrap(); inner != nil {
			collect(inner, out)
		} else {
			*out = append(*out, fmt.Sprintf("(detail withheld: %T)", err))
		}
	default:
		*out = append(*out, fmt.Sprintf("(detail withheld: %T)", err))
	}
}

func collectValidation(verr *jsonschema.ValidationError, out *[]string) {
	if len(verr.Causes) > 0 {
		for _, c := range verr.Causes {
			collectValidation(c, out)
		}
		return
	}
	at := "/" + strings.Join(verr.InstanceLocation, "/")
	keyword := "schema"
	if kp := verr.ErrorKind.KeywordPath(); len(kp) > 0 {
		keyword = kp[len(kp)-1]
	}
	msg := "at " + at + ": fails " + keyword
	switch k := verr.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		msg += fmt.Sprintf(" (undocumented %q)", k.Properties)
	case *kind.Required:
		msg += fmt.Sprintf(" (missing %q)", k.Missing)
	case *kind.Type:
		msg += fmt.Sprintf(" (got %s, want %s)", k.Got, strings.Join(k.Want, " or "))
	}
	*out = append(*out, msg)
}
