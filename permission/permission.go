// Package permission defines the permission levels a session holds, the
// decisions an approval can reach, and the Asker that front doors implement
// to put a call to a person.
//
// It is a leaf package: it imports nothing from meka.
package permission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Level orders what a session may do: None < Read < Workspace < Unrestricted.
type Level int

const (
	None Level = iota
	Read
	Workspace
	Unrestricted
)

// Levels lists every level from lowest to highest.
var Levels = []Level{None, Read, Workspace, Unrestricted}

var levelNames = [...]string{"none", "read", "workspace", "unrestricted"}

func (l Level) String() string {
	if l < None || l > Unrestricted {
		return fmt.Sprintf("level(%d)", int(l))
	}
	return levelNames[l]
}

// ErrUnknownLevel is returned by ParseLevel for a name that is not a level.
var ErrUnknownLevel = errors.New("unknown permission level")

// ParseLevel reads a level by its name.
func ParseLevel(s string) (Level, error) {
	for i, n := range levelNames {
		if s == n {
			return Level(i), nil
		}
	}
	return None, fmt.Errorf("%w %q (want one of %s)", ErrUnknownLevel, s, strings.Join(levelNames[:], ", "))
}

// Allows reports whether a session at l may run something that needs need.
func (l Level) Allows(need Level) bool { return l > None && l >= need }

func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

func (l *Level) UnmarshalText(b []byte) error {
	v, err := ParseLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Decision is a person's answer to an approval request.
type Decision int

const (
	// Deny refuses this one call.
	Deny Decision = iota
	// Allow lets this one call run.
	Allow
	// AlwaysAllow lets this call and every later call of the same tool run,
	// for as long as the session is held.
	AlwaysAllow
	// AlwaysDeny refuses this call and every later call of the same tool.
	AlwaysDeny
)

var decisionNames = [...]string{"deny", "allow", "always_allow", "always_deny"}

func (d Decision) String() string {
	if d < Deny || d > AlwaysDeny {
		return fmt.Sprintf("decision(%d)", int(d))
	}
	return decisionNames[d]
}

// Allowed reports whether the call the decision answers may run.
func (d Decision) Allowed() bool { return d == Allow || d == AlwaysAllow }

// Sticky reports whether the decision also answers later calls of the tool.
func (d Decision) Sticky() bool { return d == AlwaysAllow || d == AlwaysDeny }

// Request is one tool call put to a person.
type Request struct {
	SessionID string
	CallID    string
	Tool      string
	// Title is the tool name and the argument that identifies the call.
	Title     string
	Arguments json.RawMessage
	// Needs is the level the call requires; Has is the session's level.
	Needs, Has Level
	// SubAgent, set when a sub-agent's call is forwarded to whoever is
	// attached to its parent, names the sub-agent (its label); SessionID is
	// then the sub-agent's session and SpawnCallID the parent's call that
	// spawned it.
	SubAgent    string
	SpawnCallID string
}

// Asker puts a request to whoever is attached to the session. Ask blocks
// until an answer, ctx's end, or the asker's own expiry; an error or a
// canceled ctx counts as Deny. Implementations must be safe for concurrent
// use: calls of one round may ask at the same time.
type Asker interface {
	Ask(ctx context.Context, req Request) (Decision, error)
}

// AskerFunc adapts a function to Asker.
type AskerFunc func(ctx context.Context, req Request) (Decision, error)

func (f AskerFunc) Ask(ctx context.Context, req Request) (Decision, error) { return f(ctx, req) }

// DenyAll is the Asker of a session nobody is attached to: every request is
// denied at once.
var DenyAll Asker = AskerFunc(func(context.Context, Request) (Decision, error) { return Deny, nil })
