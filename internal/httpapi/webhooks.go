package httpapi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"meka.dev/meka/model"
)

// Webhook is an endpoint feed events are posted to, signed as Standard
// Webhooks prescribe.
type Webhook struct {
	Name   string
	URL    string
	Secret []byte // the key, decoded from its whsec_ form
	// Events are the types sent; "*" sends every durable event.
	Events []string
}

// ParseSecret decodes a Standard Webhooks secret, "whsec_" and base64 of
// at least 24 bytes.
func ParseSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(s), "whsec_")
	if !ok {
		return nil, errors.New("a webhook secret starts with whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("a webhook secret is whsec_ and base64: %w", err)
	}
	if len(key) < 24 {
		return nil, fmt.Errorf("a webhook secret needs at least 24 bytes, this one has %d", len(key))
	}
	return key, nil
}

// Delivery is one event owed to one endpoint.
type Delivery struct {
	ID       int64
	Endpoint string
	Attempt  int // tries made before this one
	Event    Event
}

// Outbox keeps webhook deliveries where several hosts share them: each
// delivery is filled once and claimed by one host at a time.
type Outbox interface {
	Fill(ctx context.Context, endpoint string, types []string, now time.Time, limit int) (int, error)
	Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]Delivery, error)
	// Settle records an outcome if owner still holds the delivery.
	Settle(ctx context.Context, id int64, owner, status string, attempt int, next time.Time, lastError string) (bool, error)
	Disable(ctx context.Context, endpoint string) error
}

// retrySchedule is Standard Webhooks' schedule: the wait before each
// attempt after the first.
var retrySchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour}

const deliveryTimeout = 15 * time.Second

// sign returns the webhook-signature value of a message.
func sign(key []byte, msgID string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.", msgID, ts)
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// deliverWebhooks fills and drains the outbox until ctx ends.
func (srv *Server) deliverWebhooks(ctx context.Context, done <-chan struct{}) {
	if len(srv.opts.Webhooks) == 0 || srv.opts.Outbox == nil {
		return
	}
	owner := "serve-" + uuid.NewString()
	client := &http.Client{Timeout: deliveryTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	hooks := make(map[string]Webhook, len(srv.opts.Webhooks))
	for _, h := range srv.opts.Webhooks {
		hooks[h.Name] = h
	}
	tick := time.NewTicker(srv.webhookPoll())
	defer tick.Stop()
	for {
		changed := srv.opts.Feed.Changed()
		srv.webhookRound(ctx, owner, client, hooks)
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

func (srv *Server) webhookPoll() time.Duration {
	if srv.opts.WebhookPoll > 0 {
		return srv.opts.WebhookPoll
	}
	return time.Second
}

// webhookRound copies new events into the outbox and sends what is due.
func (srv *Server) webhookRound(ctx context.Context, owner string, client *http.Client, hooks map[string]Webhook) {
	now := srv.opts.Now()
	for _, h := range srv.opts.Webhooks {
		for {
			n, err := srv.opts.Outbox.Fill(ctx, h.Name, h.Events, now, 500)
			if err != nil {
				srv.log.Warn("fill webhook outbox", "webhook", h.Name, "err", err)
				break
			}
			if n < 500 {
				break
			}
		}
	}
	const lease = 2 * deliveryTimeout
	ds, err := srv.opts.Outbox.Claim(ctx, owner, now, lease, 64)
	if err != nil {
		srv.log.Warn("claim webhook deliveries", "err", err)
		return
	}
	for _, d := range ds {
		// A slow endpoint eats the batch's lease; a delivery that could
		// outlast it might be claimed and sent by another host meanwhile.
		// Leave it: its lease lapses and a later round claims it.
		if srv.opts.Now().Add(deliveryTimeout).After(now.Add(lease)) {
			break
		}
		h, ok := hooks[d.Endpoint]
		if !ok {
			continue // an endpoint no longer configured here: its lease lapses
		}
		srv.deliver(ctx, owner, client, h, d)
	}
}

// deliver posts one event and records the outcome: 2xx delivered, 410
// disables the endpoint, anything else retried on the schedule (429 and
// 503 as Retry-After asks) until it runs out.
func (srv *Server) deliver(ctx context.Context, owner string, client *http.Client, h Webhook, d Delivery) {
	body, _ := json.Marshal(srv.outgoing(d.Event))
	msgID := "msg_" + strconv.FormatInt(d.Event.ID, 10)
	now := srv.opts.Now()
	ts := now.Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sign(h.Secret, msgID, ts, body))
	res, err := client.Do(req)
	attempt := d.Attempt + 1
	var status string
	var retryAfter time.Duration
	var lastErr string
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return // shutting down: the lease lapses and the delivery is retried
		}
		lastErr = err.Error()
	case res.StatusCode >= 200 && res.StatusCode < 300:
		status = "delivered"
	case res.StatusCode == http.StatusGone:
		status = "disabled"
		lastErr = "the endpoint answered 410 Gone"
	default:
		lastErr = res.Status
		if res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable {
			retryAfter = model.ParseRetryAfter(res.Header.Get("Retry-After"), now)
		}
	}
	if res != nil {
		res.Body.Close()
	}
	next := now
	if status == "" {
		sched := srv.retrySchedule()
		if attempt > len(sched) {
			status = "dead"
		} else {
			status = "pending"
			wait := sched[attempt-1]
			wait += time.Duration((rand.Float64()*0.2 - 0.1) * float64(wait)) // ±10%
			next = now.Add(max(wait, retryAfter))
		}
	}
	if _, err := srv.opts.Outbox.Settle(context.WithoutCancel(ctx), d.ID, owner, status, attempt, next, lastErr); err != nil {
		srv.log.Warn("settle webhook delivery", "webhook", h.Name, "err", err)
	}
	if status == "disabled" {
		if err := srv.opts.Outbox.Disable(context.WithoutCancel(ctx), h.Name); err != nil {
			srv.log.Warn("disable webhook", "webhook", h.Name, "err", err)
		}
		srv.log.Warn("webhook endpoint answered 410 Gone: disabled", "webhook", h.Name)
	}
}

func (srv *Server) retrySchedule() []time.Duration {
	if srv.opts.RetrySchedule != nil {
		return srv.opts.RetrySchedule
	}
	return retrySchedule
}
