package host

import (
	"meka.dev/meka/agent"
	"meka.dev/meka/session"
)

// WithheldFailure is what a client is told of a failed turn when
// provider errors are not relayed: the text itself stays in meka's log.
const WithheldFailure = "The model provider or meka returned an error; the details are in meka's log (stderr)."

// RelayNotice is n as a front door may show it: the notice of a failed
// turn carries the provider's own text (or a connection error naming
// base_url), which only travels when relay is on. Every door applies the
// same policy, live and in a replay alike.
func RelayNotice(n session.Notice, relay bool) session.Notice {
	if n.Title == agent.FailedTurnTitle && !relay {
		n.Description = WithheldFailure
	}
	return n
}
