package model_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/model"
)

func TestParseRateLimit(t *testing.T) {
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	oa := http.Header{}
	oa.Set("x-ratelimit-limit-requests", "5000")
	oa.Set("x-ratelimit-remaining-requests", "4999")
	oa.Set("x-ratelimit-reset-requests", "12ms")
	oa.Set("x-ratelimit-limit-tokens", "450000")
	oa.Set("x-ratelimit-remaining-tokens", "30000")
	oa.Set("x-ratelimit-reset-tokens", "6m0s")
	r, ok := model.ParseRateLimit(oa, now)
	if !ok || r.Requests.Remaining != 4999 || r.Tokens.Limit != 450000 || !r.Tokens.Reset.Equal(now.Add(6*time.Minute)) {
		t.Fatalf("openai: %+v", r)
	}
	if share, what, _ := r.Lowest(); what != "tokens" || share > 0.07 || share < 0.06 {
		t.Errorf("lowest %v %s", share, what)
	}
	if s := r.String(); !strings.Contains(s, "30000 of 450000 tokens left (resets in 6m0s)") {
		t.Errorf("String %q", s)
	}

	an := http.Header{}
	an.Set("anthropic-ratelimit-requests-limit", "50")
	an.Set("anthropic-ratelimit-requests-remaining", "2")
	an.Set("anthropic-ratelimit-requests-reset", "2026-08-01T12:00:30Z")
	r, ok = model.ParseRateLimit(an, now)
	if !ok || r.Requests.Share() != 0.04 || !r.Requests.Reset.Equal(now.Add(30*time.Second)) || r.Tokens.Known() {
		t.Fatalf("anthropic: %+v", r)
	}

	az := http.Header{}
	az.Set("x-ratelimit-remaining-tokens", "-1")
	az.Set("x-ratelimit-limit-tokens", "0")
	if r, _ := model.ParseRateLimit(az, now); r.Tokens.Known() || r.Tokens.Share() != 1 {
		t.Errorf("negative values read as known: %+v", r)
	}
	if _, ok := model.ParseRateLimit(http.Header{}, now); ok {
		t.Error("no headers, yet a rate limit")
	}
}
