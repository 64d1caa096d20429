package gemini

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"meka.dev/meka/model"
)

// apiError is Google's error body: {"error": {code, message, status,
// details}}.
type apiError struct {
	Error *struct {
		Code    num `json:"code"`
		Message str `json:"message"`
		Status  str `json:"status"`
		Details []struct {
			Type       str `json:"@type"`
			RetryDelay str `json:"retryDelay"`
		} `json:"details"`
	} `json:"error"`
}

// retryDelay reads the google.rpc.RetryInfo delay of an error body
// ("38s", "1.5s"); Gemini sends no Retry-After header.
func retryDelay(body string) time.Duration {
	var e apiError
	if json.Unmarshal([]byte(body), &e) != nil || e.Error == nil {
		return 0
	}
	for _, d := range e.Error.Details {
		if strings.HasSuffix(string(d.Type), "google.rpc.RetryInfo") {
			if v, err := time.ParseDuration(string(d.RetryDelay)); err == nil && v > 0 {
				return v
			}
		}
	}
	return 0
}

// withRetryDelay gives an error status the delay its body asks for.
func withRetryDelay(err error) error {
	var me *model.Error
	if errors.As(err, &me) && me.RetryAfter == 0 && me.Status != 0 {
		me.RetryAfter = retryDelay(me.Body)
	}
	return err
}

// streamError is an error sent as a stream event. Its code is an HTTP
// status; without one the stream broke, as a connection does.
func streamError(data []byte) *model.Error {
	var e apiError
	_ = json.Unmarshal(data, &e)
	me := &model.Error{Provider: Name, Body: strings.TrimSpace(string(data)), RetryAfter: retryDelay(string(data))}
	if e.Error != nil && e.Error.Code >= 400 && e.Error.Code < 600 {
		me.Status = int(e.Error.Code)
		return me
	}
	msg := "error in stream"
	if e.Error != nil && e.Error.Message != "" {
		msg += ": " + string(e.Error.Message)
	}
	me.Err = errors.New(msg)
	return me
}
