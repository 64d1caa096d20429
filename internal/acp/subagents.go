package acp

import (
	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
)

// This file shows sub-agents as sessions of their own to a client that
// advertised clientCapabilities.subagents: each child is announced on its
// parent with a subagent_update, linked to the agent_spawn call that made
// it (_meta.toolCallId there, _meta.subagentSessionId on the call), and
// its updates go out under its own session id. A client without the
// capability sees a sub-agent as that one call, with its recent calls as
// the call's content.

// childOpened renders the sub-agent session c of e's session: announced
// (again, when a follow-up takes it up) as running before anything of it
// goes out, then its events under its own id.
func (e *entry) childOpened(c *host.Session) {
	ctx := e.s.base
	e.mu.Lock()
	ch, seen := e.children[c.ID()]
	if !seen {
		ch = newEntry(e.s, c, true)
		ch.parent = e
		e.children[c.ID()] = ch
	}
	link := ""
	if cs := e.calls[c.Meta().ParentCallID]; cs != nil {
		link = cs.id
	}
	e.mu.Unlock()
	m := c.Meta()
	u := SubagentUpdate{SessionID: c.ID(), State: &SubagentState{State: "running"}}
	if m.Title != "" {
		u.Title = &m.Title
	}
	if link != "" {
		u.Meta = Meta{"toolCallId": link}
	}
	e.s.notify(ctx, e.id, u)
	if link != "" {
		e.s.notify(ctx, e.id, ToolCallUpdate{ToolCallID: link, Meta: Meta{"subagentSessionId": c.ID()}})
	}
	if !seen {
		ch.mu.Lock()
		ch.hs = c
		ch.unsub = c.Subscribe(ch.onEvent)
		ch.stopChildren = c.OnChild(ch.childOpened)
		ch.mu.Unlock()
	}
}

// childIdle tells the parent that a sub-agent's turn ended.
func (e *entry) childIdle(r agent.Result) {
	if e.parent == nil {
		return
	}
	st := &SubagentState{State: "idle", Usage: usage(r.Usage)}
	if r.Stop != agent.StopFailed {
		st.StopReason = stopReason(r.Stop)
	}
	e.s.notify(e.s.base, e.parent.id, SubagentUpdate{SessionID: e.id, State: st})
}

// child finds the entry of a sub-agent session, at any depth, under e.
func (e *entry) child(id string) *entry {
	e.mu.Lock()
	kids := make([]*entry, 0, len(e.children))
	for cid, c := range e.children {
		if cid == id {
			e.mu.Unlock()
			return c
		}
		kids = append(kids, c)
	}
	e.mu.Unlock()
	for _, c := range kids {
		if found := c.child(id); found != nil {
			return found
		}
	}
	return nil
}

// detachChildren stops rendering e's sub-agents.
func (e *entry) detachChildren() {
	e.mu.Lock()
	stop := e.stopChildren
	e.stopChildren = nil
	kids := e.children
	e.children = make(map[string]*entry)
	e.mu.Unlock()
	if stop != nil {
		stop()
	}
	for _, c := range kids {
		c.mu.Lock()
		if c.unsub != nil {
			c.unsub()
			c.unsub = nil
		}
		c.mu.Unlock()
		c.detachChildren()
	}
}
