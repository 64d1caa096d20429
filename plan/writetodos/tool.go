package writetodos

import (
	"context"
	"encoding/json"

	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/tool"
)

const description = `Keep the checklist of this session's work. Create it with "todos"; afterwards change items by their stable IDs (s1, s2, ... assigned on first write) with "updates".

Existing items can never be removed, replaced, reworded or reordered: mark an item that is no longer to be done "cancelled", so the record of the change stays, and add its replacement as a new item. A completed or cancelled item never goes back to pending. To add items, send "todos" with the existing items unchanged and in order, followed by the new ones. Both "todos" and "updates" may be given in one call; todos are applied first.

Statuses: "pending", "in_progress", "completed", "cancelled". "activeForm" is a present-continuous label shown while an item is in progress ("Writing tests"). Mark an item completed only when the work is done and you have evidence that it is.

A call with anything wrong in it changes nothing; the error shows the current list with its IDs. The list is shown to you with every request.`

const schema = `{
  "type": "object",
  "properties": {
    "todos": {
      "type": "array",
      "description": "The initial list, or the existing list unchanged followed by new items.",
      "items": {
        "type": "object",
        "properties": {
          "content": {"type": "string", "description": "What the item is."},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"]},
          "activeForm": {"type": "string", "description": "Present-continuous label, such as 'Writing tests'."},
          "id": {"type": "string", "description": "The item's ID, when resubmitting an existing item."}
        },
        "required": ["content", "status"],
        "additionalProperties": false
      }
    },
    "updates": {
      "type": "array",
      "description": "Changes to existing items by stable ID.",
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string", "description": "The item's stable ID, such as s2."},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"]},
          "activeForm": {"type": "string"}
        },
        "required": ["id"],
        "additionalProperties": false
      }
    }
  },
  "additionalProperties": false
}`

// writeTool is write_todos. It computes the list a call would leave
// without changing the plugin's; the fold applies the outcome once the
// session accepts the call.
type writeTool struct{ p *Plugin }

var _ tool.Tool = writeTool{}

func (t writeTool) Spec() tool.Spec {
	// Not parallel-safe: a call computes from the list the calls before it
	// in the round left.
	return tool.Spec{Name: Name, Description: description, Schema: json.RawMessage(schema),
		Level: permission.Read, Kind: tool.KindThink, Bookkeeping: true}
}

func (t writeTool) Title(json.RawMessage) string { return "Todo list" }

// Run returns the list the call leaves, recorded in the result's State so
// a replay adopts it exactly, timestamps included. A refusal changes
// nothing and appends the current list.
func (t writeTool) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	p := t.p
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.head()
	a, err := parseArgs(c.Arguments)
	var next state
	if err == nil {
		next, err = cur.write(a, p.opts.Now())
	}
	if err != nil {
		return tool.Errorf("%s", refusalText(err, cur.Items)), nil
	}
	p.pending = append(p.pending, outcome{callID: c.ID, st: next})
	r := tool.Text(renderCapped(next.Items, replyCap))
	r.State = encodeState(next)
	return r, nil
}

// refusalText is a refusal and the current list, within about errorCap
// bytes together: the reason is cut at half of it, the list takes the
// rest.
func refusalText(err error, items []Todo) string {
	const sep = "\nCurrent list:\n"
	msg := err.Error()
	if len(msg) > errorCap/2 {
		msg = plan.Clamp(msg, errorCap/2) + "…"
	}
	return msg + sep + renderCapped(items, errorCap-len(msg)-len(sep))
}
