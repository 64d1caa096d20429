package acp

import (
	"errors"
	"fmt"
	"io/fs"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// This file is the one table from meka's errors to JSON-RPC errors.
// InvalidParams is for what the client asked wrongly; InternalError only
// for faults in meka or below it, and its data follows the relay policy:
// a provider's text travels (capped) only when RelayProviderErrors is on;
// store, filesystem and configuration details never travel.

func invalidParams(format string, args ...any) *jsonrpc.Error {
	return jsonrpc.NewError(jsonrpc.InvalidParams, fmt.Sprintf(format, args...), nil)
}

// errBusy is the answer to a prompt, a switch or a fork while a turn runs.
func errBusy(what string) *jsonrpc.Error {
	if what == "" {
		return invalidParams("a prompt is already in flight for this session; cancel it first")
	}
	return invalidParams("cannot switch %s while a turn is in flight; cancel it first", what)
}

// errorData is an InternalError's data.
type errorData struct {
	Message string `json:"message"`
	// ProviderError is the provider's own text, capped, when relayed.
	ProviderError string `json:"providerError,omitempty"`
	// Detail says where the withheld detail went.
	Detail string `json:"detail,omitempty"`
}

const detailLogged = "the details are in meka's log (stderr)"

// sessionError maps an error from opening or changing a session.
func (s *server) sessionError(op string, id string, err error) error {
	var held *session.HeldError
	switch {
	case errors.As(err, &held):
		return invalidParams("session %s is open in another meka process (%s)", id, held.Holder)
	case errors.Is(err, session.ErrNotFound), errors.Is(err, session.ErrAmbiguous):
		return jsonrpc.NewError(jsonrpc.InvalidParams, "unknown session "+id, map[string]string{"sessionId": id})
	case errors.Is(err, host.ErrLevelNotEnabled):
		return invalidParams("%v", err)
	case errors.Is(err, host.ErrWideWorkspace):
		var wide *host.WideWorkspaceError
		errors.As(err, &wide)
		return invalidParams("%v", wide)
	case errors.Is(err, agent.ErrBusy):
		return errBusy("")
	case errors.Is(err, fs.ErrNotExist):
		return invalidParams("%s: a directory does not exist", op)
	}
	s.log.Error("acp: "+op, "session_id", id, "err", err)
	return jsonrpc.NewError(jsonrpc.InternalError, "Internal error", errorData{Message: op + " failed inside meka", Detail: detailLogged})
}

// turnError maps the error of a failed turn.
func (s *server) turnError(id string, err error) error {
	if errors.Is(err, agent.ErrBusy) {
		return errBusy("")
	}
	s.log.Error("acp: turn failed", "session_id", id, "err", err)
	var perr *model.Error
	if errors.As(err, &perr) {
		d := errorData{Message: "The model provider returned an error."}
		if s.opts.RelayProviderErrors {
			d.ProviderError = perr.Display()
		} else {
			d.Detail = detailLogged
		}
		return jsonrpc.NewError(jsonrpc.InternalError, "Internal error", d)
	}
	return jsonrpc.NewError(jsonrpc.InternalError, "Internal error", errorData{Message: "The turn failed inside meka.", Detail: detailLogged})
}
