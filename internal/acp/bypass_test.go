package acp

import (
	"encoding/json"
	"strings"
	"testing"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/permission"
)

// A client that allows everything without asking (mode bypassPermissions,
// by set_mode or the permission option) gets the highest confined level
// enabled with approvals off: nothing is asked, nothing unconfined.
func TestBypassPermissionsIsConfinedWithoutAsking(t *testing.T) {
	for _, how := range []string{"set_mode", "set_config_option"} {
		t.Run(how, func(t *testing.T) {
			h := newHarness(t, harnessOptions{perms: host.Permissions{Default: permission.Read, Approvals: true}})
			id := h.newSession()
			if how == "set_mode" {
				h.call("session/set_mode", SetSessionModeRequest{SessionID: id, ModeID: bypassMode}, nil)
			} else {
				var resp SetSessionConfigOptionResponse
				h.call("session/set_config_option", SetSessionConfigOptionRequest{SessionID: id, ConfigID: "permission", Value: json.RawMessage(`"` + bypassMode + `"`)}, &resp)
				for _, o := range resp.ConfigOptions {
					if o.ID == "permission" && o.CurrentValue != "workspace" {
						t.Errorf("permission option = %v, want workspace", o.CurrentValue)
					}
				}
			}
			hs, ok := h.host.Get(id)
			if !ok {
				t.Fatal("session gone")
			}
			if hs.Level() != permission.Workspace || hs.Approvals() {
				t.Errorf("level %v, approvals %v; want workspace, off", hs.Level(), hs.Approvals())
			}
		})
	}
	// Without a confined level enabled it is refused, the level unchanged.
	h := newHarness(t, harnessOptions{perms: host.Permissions{Default: permission.Unrestricted, Enabled: []permission.Level{permission.None, permission.Unrestricted}},
		opts: Options{Levels: []permission.Level{permission.None, permission.Unrestricted}}})
	id := h.newSession()
	if e := h.callErr("session/set_mode", SetSessionModeRequest{SessionID: id, ModeID: bypassMode}); e == nil || e.Code != -32602 || !strings.Contains(e.Message, "workspace or read") {
		t.Fatalf("bypass with no confined level: %+v", e)
	}
	if hs, _ := h.host.Get(id); hs.Level() != permission.Unrestricted {
		t.Errorf("level %v after a refused bypass", hs.Level())
	}
}

// A session at a level whose commands cannot be confined here is told so
// after session/new and when it moves to another such level; a level that
// needs no confinement says nothing.
func TestConfinementNotice(t *testing.T) {
	var asked []permission.Level
	gap := func(l permission.Level) string {
		asked = append(asked, l)
		if l == permission.Read || l == permission.Workspace {
			return "no backend: user namespaces are off"
		}
		return ""
	}
	h := newHarness(t, harnessOptions{opts: Options{Confinement: gap}})
	id := h.newSession()
	h.sync()
	notices := func() []NoticeUpdate {
		var out []NoticeUpdate
		for _, n := range h.take() {
			if u, ok := n.Update.(NoticeUpdate); ok {
				out = append(out, u)
			}
		}
		return out
	}
	ns := notices()
	if len(ns) != 1 || ns[0].Severity != "warning" || !strings.Contains(ns[0].Title, "workspace level refuses shell commands") || ns[0].Description != "no backend: user namespaces are off" {
		t.Fatalf("after session/new: %+v", ns)
	}
	h.call("session/set_mode", SetSessionModeRequest{SessionID: id, ModeID: "unrestricted"}, nil)
	h.sync()
	if ns := notices(); len(ns) != 0 {
		t.Fatalf("unrestricted was warned: %+v", ns)
	}
	h.call("session/set_config_option", SetSessionConfigOptionRequest{SessionID: id, ConfigID: "permission", Value: json.RawMessage(`"read"`)}, nil)
	h.sync()
	if ns := notices(); len(ns) != 1 || !strings.Contains(ns[0].Title, "read level") {
		t.Fatalf("after moving to read: %+v", ns)
	}
}
