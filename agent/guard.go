package agent

import (
	"bytes"
	"encoding/json"

	"meka.dev/meka/model"
)

type repeatVerdict int

const (
	repeatOK repeatVerdict = iota
	repeatWarn
	repeatStop
)

// repeatGuard counts identical non-bookkeeping calls in a row. Bookkeeping
// calls are never shown to it, so interleaving them neither counts nor
// breaks a run of repeats.
type repeatGuard struct {
	warnAt int
	last   string
	count  int
	warned bool
}

func (g *repeatGuard) observe(c model.ToolCall) repeatVerdict {
	sig := c.Name + "\x00" + canonicalJSON(c.Arguments)
	if sig != g.last {
		g.last, g.count, g.warned = sig, 1, false
		return repeatOK
	}
	g.count++
	switch {
	case g.warned:
		return repeatStop
	case g.count >= g.warnAt:
		g.warned = true
		return repeatWarn
	}
	return repeatOK
}

// canonicalJSON re-encodes v with sorted keys and no insignificant space,
// so that the same arguments written differently compare equal.
func canonicalJSON(raw json.RawMessage) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}
