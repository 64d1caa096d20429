package openai

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"meka.dev/meka/model"
)

// callError is model.CallError for this provider.
func callError(ctx context.Context, err error) error { return model.CallError(ctx, Name, err) }

// hasError reports an "error" member that is not null.
func hasError(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// streamError is an error sent in place of a reply, in a stream (alone
// or in a chunk) or as a whole response: {"error": {"message", "type",
// "code"}}, or a bare string. Its status is the code when that is an HTTP error status,
// as OpenRouter and vLLM send it.
func streamError(data []byte) *model.Error {
	var ev struct {
		Error json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(data, &ev)
	var e struct {
		Message str             `json:"message"`
		Type    str             `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(ev.Error, &e) != nil {
		var s string
		_ = json.Unmarshal(ev.Error, &s)
		e.Message = str(s)
	}
	// The body is the error alone, as an error status carries it, without
	// the rest of a chunk that some servers send it in.
	body := strings.TrimSpace(string(data))
	if hasError(ev.Error) {
		body = `{"error":` + string(ev.Error) + `}`
	}
	me := &model.Error{Provider: Name, Body: body}
	code, err := strconv.ParseFloat(strings.Trim(string(e.Code), `"`), 64)
	if err == nil && code >= 400 && code < 600 && code == float64(int(code)) {
		me.Status = int(code)
		return me
	}
	// No status to go by: the stream broke, as a connection does.
	msg := "error event in stream"
	if e.Type != "" {
		msg += ": " + string(e.Type)
	}
	if e.Message != "" {
		msg += ": " + string(e.Message)
	}
	me.Err = errors.New(msg)
	return me
}
