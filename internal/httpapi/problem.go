package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/events"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/session"
)

// problem is an RFC 9457 problem details body with a stable code.
type problem = events.Problem

// errStatus maps a domain error to a problem: the one table of this
// front door from errors to HTTP statuses.
func errStatus(err error) (status int, code, title string) {
	var held *session.HeldError
	switch {
	case errors.Is(err, session.ErrNotFound):
		return http.StatusNotFound, "session-unknown", "No such session"
	case errors.As(err, &held), errors.Is(err, session.ErrHeld):
		return http.StatusConflict, "held-elsewhere", "Another meka process holds the session"
	case errors.Is(err, agent.ErrBusy):
		return http.StatusConflict, "turn-in-flight", "A turn is running in the session"
	case errors.Is(err, host.ErrNoProject):
		return http.StatusUnprocessableEntity, "project-unknown", "No such project"
	case errors.Is(err, host.ErrLevelNotEnabled):
		return http.StatusUnprocessableEntity, "level-not-enabled", "The permission level is not enabled"
	case errors.Is(err, host.ErrWideWorkspace):
		return http.StatusUnprocessableEntity, "workspace-too-wide", "The root or home directory cannot be a session's workspace"
	case errors.Is(err, errSubAgent):
		return http.StatusUnprocessableEntity, "subagent-session", "A sub-agent's session is driven through its parent"
	case errors.As(err, new(*host.FilesChangedError)):
		return http.StatusConflict, "files-changed", "Files changed outside meka since its last checkpoint; rewind with force to overwrite them"
	case errors.As(err, new(*host.CheckpointPrunedError)):
		return http.StatusConflict, "checkpoint-pruned", "The turn's checkpoint was pruned ([checkpoints] max_bytes)"
	case errors.Is(err, host.ErrNoCheckpoints):
		return http.StatusUnprocessableEntity, "checkpoints-off", "Checkpoints are off, so files cannot be rewound"
	case errors.Is(err, host.ErrTurnOutOfRange):
		return http.StatusUnprocessableEntity, "turn-out-of-range", "The session has no such turn to keep"
	}
	return http.StatusInternalServerError, "internal", "meka failed"
}

func writeProblem(w http.ResponseWriter, p problem) {
	if p.Type == "" {
		p.Type = "/v1/problems/" + p.Code
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
