package model

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
)

// Where describes the endpoint a profile sends to, so that a failure can
// say what to change: the variable holding its key, its base URL (the
// adapter's default when the profile sets none), its model.
type Where struct {
	KeyEnv  string
	BaseURL string
	Model   string
}

// Advice is what to do about e, sent to w: a refused key names its
// variable, a 404 the base URL, a connection failure the URL it could not
// reach. Empty when e says nothing a person can act on here.
func Advice(e *Error, w Where) string {
	switch {
	case e.Status == 401 || e.Status == 403:
		if w.KeyEnv == "" {
			return fmt.Sprintf("the endpoint %s refused the request without a key: set api_key_env in the profile to the variable holding one", w.BaseURL)
		}
		return fmt.Sprintf("the key in $%s was refused by %s: check that it is the key for this endpoint and has not expired or been revoked", w.KeyEnv, w.BaseURL)
	case e.Status == 404:
		if e.Provider == "anthropic" && strings.HasSuffix(strings.TrimRight(w.BaseURL, "/"), "/v1") {
			return fmt.Sprintf("the Anthropic base URL %s ends in /v1, and meka adds /v1/messages itself: drop the /v1", w.BaseURL)
		}
		if strings.Contains(strings.ToLower(e.Body), "model") && w.Model != "" {
			return fmt.Sprintf("check that the model %q exists at %s (the profile's model), and the base URL", w.Model, w.BaseURL)
		}
		return fmt.Sprintf("nothing answers at the base URL %s: check base_url (an OpenAI-compatible server's usually ends in /v1)", w.BaseURL)
	case e.Status == 0 && e.Err != nil:
		var te *TimeoutError
		if errors.As(e.Err, &te) {
			return fmt.Sprintf("%s did not answer in time: is the server up, and the base URL right?", w.BaseURL)
		}
		return fmt.Sprintf("cannot reach %s: is the server running, and the base URL right?", w.BaseURL)
	}
	return ""
}

// Advised returns p with every *Error it reports carrying Advice for w.
func Advised(p Provider, w Where) Provider { return advised{Provider: p, where: w} }

type advised struct {
	Provider
	where Where
}

func (a advised) Stream(ctx context.Context, req *Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for ev, err := range a.Provider.Stream(ctx, req) {
			var me *Error
			if err != nil && errors.As(err, &me) && me.Hint == "" && ctx.Err() == nil {
				c := *me
				c.Hint = Advice(&c, a.where)
				if c.Hint != "" {
					err = &c
				}
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}
