package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/consensus-md/consensus/internal/cli/command"
	"github.com/consensus-md/consensus/internal/jwk"
	"github.com/consensus-md/consensus/internal/webhook"
)

// webhookFlags are the flags of verify webhook.
type webhookFlags struct {
	keys, headers, id, timestamp, signature string
	anyAge                                  bool
}

func verifyWebhookCommand(env Env) *cobra.Command {
	var f webhookFlags
	c := &cobra.Command{
		Use:   "webhook BODY --keys JWKS (--headers FILE | --id ID --timestamp TS --signature SIG)",
		Short: "Check a received webhook delivery's v1a signature with the issuer's keys",
		Long: `Check a webhook delivery as received: the exact body bytes (BODY, a file) and its
Standard Webhooks headers, from a file of "name: value" lines (--headers, such as
a dump of the request) or given one by one. The v1a signature in
webhook-signature must verify, with a key of the JWKS saved from
<issuer>/.well-known/consensus-keys, over "<webhook-id>.<webhook-timestamp>.<body>",
and webhook-timestamp must be within 5 minutes of now (--any-age skips that, for
a delivery saved earlier). Exit status 0 when it verifies, 1 when it does not,
3 when a file could not be read.`,
		Example: `  curl -sS https://consensus.md/.well-known/consensus-keys > keys.json
  consensus verify webhook body.json --keys keys.json --headers delivery.headers
  consensus verify webhook body.json --keys keys.json --id "$ID" --timestamp "$TS" --signature "$SIG"`,
		Args: command.Args("BODY"),
		RunE: func(_ *cobra.Command, args []string) error {
			if f.keys == "" {
				return command.Usagef("give --keys JWKS (saved from /.well-known/consensus-keys)")
			}
			return verifyWebhook(args[0], f, env)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.keys, "keys", "", "the issuer's JWKS `FILE` (/.well-known/consensus-keys)")
	fl.StringVar(&f.headers, "headers", "", "a `FILE` of the delivery's headers, one \"name: value\" a line")
	fl.StringVar(&f.id, "id", "", "the webhook-id header")
	fl.StringVar(&f.timestamp, "timestamp", "", "the webhook-timestamp header (Unix seconds)")
	fl.StringVar(&f.signature, "signature", "", "the webhook-signature header (v1a,<base64> entries)")
	fl.BoolVar(&f.anyAge, "any-age", false, "accept a webhook-timestamp of any age")
	return c
}

// verifyWebhook checks one saved delivery and prints the result.
func verifyWebhook(bodyFile string, f webhookFlags, env Env) error {
	body, err := os.ReadFile(bodyFile)
	if err != nil {
		return unreadable(err)
	}
	raw, err := os.ReadFile(f.keys)
	if err != nil {
		return unreadable(err)
	}
	set, err := jwk.ParseSet(raw)
	if err != nil {
		return unreadable(fmt.Errorf("%s: %w", f.keys, err))
	}
	keys := set.PublicKeys()
	if f.headers != "" {
		if err := readWebhookHeaders(f.headers, &f); err != nil {
			return unreadable(err)
		}
	}
	if f.id == "" || f.timestamp == "" || f.signature == "" {
		return command.Usagef("the webhook-id, webhook-timestamp and webhook-signature are all needed")
	}
	now := time.Now()
	if f.anyAge {
		var ts int64
		if _, err := fmt.Sscan(f.timestamp, &ts); err == nil {
			now = time.Unix(ts, 0)
		}
	}
	if err := webhook.Verify(keys, f.id, f.timestamp, f.signature, body, now); err != nil {
		fmt.Fprintln(env.Stdout, "webhook signature: FAIL:", strings.TrimPrefix(err.Error(), "webhook: "))
		return errors.New("the webhook delivery does not verify")
	}
	fmt.Fprintln(env.Stdout, "webhook signature: ok (v1a, Ed25519, a key of", f.keys+")")
	return nil
}

// readWebhookHeaders fills the header flags not given from a file of
// "name: value" lines (a curl -D dump, say); names match in any case.
func readWebhookHeaders(file string, f *webhookFlags) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	for name, flag := range map[string]*string{webhook.HeaderID: &f.id, webhook.HeaderTimestamp: &f.timestamp, webhook.HeaderSignature: &f.signature} {
		if *flag == "" {
			*flag = headerValue(b, name)
		}
	}
	return nil
}
