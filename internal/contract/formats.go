package contract

import (
	"errors"
	"io"
	"net/http"
	"net/mail"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

var registerOnce sync.Once

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// register defines the string formats the spec uses (kin-openapi checks
// none of them until they are defined) and decoders for the media types it
// serves. Both registries are global in kin-openapi, hence once.
func register() {
	registerOnce.Do(func() {
		openapi3.DefineStringFormatValidator("uuid", openapi3.NewCallbackValidator(func(s string) error {
			if !uuidRE.MatchString(s) {
				return errors.New("not a UUID")
			}
			return nil
		}))
		openapi3.DefineStringFormatValidator("email", openapi3.NewCallbackValidator(func(s string) error {
			if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
				return errors.New("not an email address")
			}
			return nil
		}))
		openapi3.DefineStringFormatValidator("date-time", openapi3.NewCallbackValidator(func(s string) error {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				return errors.New("not an RFC 3339 date-time")
			}
			return nil
		}))
		openapi3.DefineStringFormatValidator("uri", openapi3.NewCallbackValidator(func(s string) error {
			if u, err := url.Parse(s); err != nil || !u.IsAbs() {
				return errors.New("not an absolute URI")
			}
			return nil
		}))
		text := func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(body)
			return string(b), err
		}
		openapi3filter.RegisterBodyDecoder("text/markdown", text)
		openapi3filter.RegisterBodyDecoder("text/html", text)
		openapi3filter.RegisterBodyDecoder("text/css", text)
		openapi3filter.RegisterBodyDecoder("text/javascript", text)
		openapi3filter.RegisterBodyDecoder("image/x-icon", text) // its bytes, checked as a non-empty string
		openapi3filter.RegisterBodyDecoder("application/linkset+json", openapi3filter.JSONBodyDecoder)
		openapi3filter.RegisterBodyDecoder("application/schema+json", openapi3filter.JSONBodyDecoder)
	})
}
