package venue

import (
	"context"

	"github.com/consensus-md/consensus/internal/canon"
	"github.com/consensus-md/consensus/internal/room"
	"github.com/consensus-md/consensus/internal/webhook"
)

// WebhookInput is the body of PUT …/webhook.
type WebhookInput struct {
	URL *string `json:"url"`
}

// WebhookView is a participant's webhook with its delivery state.
type WebhookView struct {
	URL            string         `json:"url"`
	State          string         `json:"state"` // active or disabled
	DisabledReason *string        `json:"disabledReason"`
	CreatedAt      string         `json:"createdAt"`
	Pending        int64          `json:"pending"`
	Failed         int64          `json:"failed"`
	LastDelivery   *LastDelivery  `json:"lastDelivery"`
	Signature      WebhookSigning `json:"signature"`
}

// LastDelivery is the latest delivery that was attempted.
type LastDelivery struct {
	State      string  `json:"state"`
	Attempts   int     `json:"attempts"`
	Status     *int    `json:"status"`
	FinishedAt *string `json:"finishedAt"`
}

// WebhookSigning tells a receiver how to check a delivery.
type WebhookSigning struct {
	Scheme string `json:"scheme"`
	Keys   string `json:"keys"`
}

// WebhookPolicy is how endpoints are checked: whether loopback is allowed
// (local runs).
type WebhookPolicy struct {
	AllowLoopback bool
}

// SetWebhook registers p's endpoint (replacing any), after checking the
// URL and every address its host resolves to: refused URLs are a
// *room.ValidationError on url. A revoked credential never gets here.
func (v *Venue) SetWebhook(ctx context.Context, p *Principal, in WebhookInput) (*WebhookView, error) {
	if in.URL == nil || *in.URL == "" {
		return nil, &room.ValidationError{Field: "url", Reason: `is required: {"url": "https://…"}`}
	}
	u, err := webhook.CheckURL(*in.URL, v.Webhooks.AllowLoopback)
	if err == nil {
		err = webhook.Resolve(ctx, nil, u.Hostname(), v.Webhooks.AllowLoopback)
	}
	if err != nil {
		return nil, &room.ValidationError{Field: "url", Reason: err.Error()}
	}
	if err := v.Store.WebhookUpsert(ctx, p.ParticipantID, u.String(), canon.Now(v.now())); err != nil {
		return nil, err
	}
	return v.Webhook(ctx, p)
}

// Webhook returns p's endpoint and its delivery state, or room.ErrNotFound.
func (v *Venue) Webhook(ctx context.Context, p *Principal) (*WebhookView, error) {
	w, err := v.Store.WebhookGet(ctx, p.ParticipantID)
	if err != nil {
		return nil, err
	}
	view := &WebhookView{URL: w.URL, State: "active", CreatedAt: canon.FormatTime(w.CreatedAt), Pending: w.Pending, Failed: w.Failed,
		Signature: WebhookSigning{Scheme: "Standard Webhooks v1, v1a (Ed25519)", Keys: v.Origin + "/.well-known/consensus-keys"}}
	if w.DisabledAt != nil {
		view.State, view.DisabledReason = "disabled", ptr(w.DisabledReason)
	}
	if l := w.Last; l != nil {
		view.LastDelivery = &LastDelivery{State: l.State, Attempts: l.Attempts, Status: l.Status}
		if l.FinishedAt != nil {
			view.LastDelivery.FinishedAt = ptr(canon.FormatTime(*l.FinishedAt))
		}
	}
	return view, nil
}

// DeleteWebhook removes p's endpoint and its queued deliveries, or answers
// room.ErrNotFound.
func (v *Venue) DeleteWebhook(ctx context.Context, p *Principal) error {
	return v.Store.WebhookDelete(ctx, p.ParticipantID, v.now())
}
