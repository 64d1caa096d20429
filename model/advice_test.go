package model

import (
	"strings"
	"syscall"
	"testing"
)

func TestAdvice(t *testing.T) {
	w := Where{KeyEnv: "MY_KEY", BaseURL: "http://127.0.0.1:8080/v1", Model: "qwen"}
	for _, tc := range []struct {
		name string
		e    *Error
		w    Where
		want string
	}{
		{"401", &Error{Provider: "openai", Status: 401}, w, "the key in $MY_KEY was refused by http://127.0.0.1:8080/v1"},
		{"403", &Error{Provider: "openai", Status: 403}, w, "$MY_KEY"},
		{"401 without a key variable", &Error{Provider: "openai", Status: 401}, Where{BaseURL: "http://x/v1"}, "set api_key_env"},
		{"404", &Error{Provider: "openai", Status: 404, Body: "404 page not found"}, w, "nothing answers at the base URL http://127.0.0.1:8080/v1"},
		{"404 model", &Error{Provider: "openai", Status: 404, Body: `{"error":{"message":"model 'qwen' not found"}}`}, w, `the model "qwen"`},
		{"anthropic /v1", &Error{Provider: "anthropic", Status: 404}, Where{KeyEnv: "K", BaseURL: "https://proxy.example/v1/"}, "ends in /v1, and meka adds /v1/messages itself: drop the /v1"},
		{"refused", &Error{Provider: "openai", Err: syscall.ECONNREFUSED}, w, "cannot reach http://127.0.0.1:8080/v1"},
		{"500", &Error{Provider: "openai", Status: 500}, w, ""},
	} {
		got := Advice(tc.e, tc.w)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	e := &Error{Provider: "openai", Status: 401, Body: "bad key", Hint: "check $K"}
	if e.Display() != "openai returned HTTP 401: bad key; check $K" || !strings.HasSuffix(e.Error(), "; check $K") {
		t.Errorf("Display %q Error %q", e.Display(), e.Error())
	}
}
