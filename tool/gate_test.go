package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

type specTool struct{ spec tool.Spec }

func (s specTool) Spec() tool.Spec { return s.spec }
func (s specTool) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Text("ran"), nil
}

func on() bool { return true }

var writeTool = specTool{tool.Spec{Name: "file_write", Schema: json.RawMessage(`{"type":"object"}`), Level: permission.Workspace}}

func TestGateLevels(t *testing.T) {
	cases := []struct {
		has     permission.Level
		allowed bool
		reason  string
	}{
		{permission.None, false, "level is none"},
		{permission.Read, false, "needs the workspace permission level"},
		{permission.Workspace, true, ""},
		{permission.Unrestricted, true, ""},
	}
	for _, tc := range cases {
		g := &tool.Gate{Level: func() permission.Level { return tc.has }}
		v := g.Check(t.Context(), writeTool, tool.Call{})
		if v.Allowed != tc.allowed || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("at %s: %+v", tc.has, v)
		}
	}
	g := &tool.Gate{Level: func() permission.Level { return permission.Read },
		Overrides: map[string]permission.Level{"file_write": permission.Read}}
	if v := g.Check(t.Context(), writeTool, tool.Call{}); !v.Allowed {
		t.Errorf("override ignored: %+v", v)
	}
}

func TestGateNoneRefusesEvenWithApprovals(t *testing.T) {
	asked := false
	g := &tool.Gate{Level: func() permission.Level { return permission.None }, Approvals: on,
		Asker: permission.AskerFunc(func(context.Context, permission.Request) (permission.Decision, error) {
			asked = true
			return permission.Allow, nil
		})}
	if v := g.Check(t.Context(), writeTool, tool.Call{}); v.Allowed || asked {
		t.Fatalf("verdict %+v asked %v", v, asked)
	}
}

// An approval nobody answers is denied after 30 minutes, and the turn
// goes on.
func TestApprovalExpiryDenies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		g := &tool.Gate{Level: func() permission.Level { return permission.Read }, Approvals: on,
			Asker: permission.AskerFunc(func(ctx context.Context, _ permission.Request) (permission.Decision, error) {
				<-ctx.Done()
				return permission.Allow, ctx.Err()
			})}
		v := g.Check(context.Background(), writeTool, tool.Call{Arguments: json.RawMessage(`{}`)})
		if v.Allowed || !strings.Contains(v.Reason, "denied") {
			t.Fatalf("verdict %+v", v)
		}
		if waited := time.Since(start); waited != tool.DefaultApprovalTimeout {
			t.Fatalf("waited %v", waited)
		}
	})
}

func TestApprovalRequestCarriesTitleAndArguments(t *testing.T) {
	var got permission.Request
	g := &tool.Gate{Level: func() permission.Level { return permission.Read }, Approvals: on,
		Asker: permission.AskerFunc(func(_ context.Context, r permission.Request) (permission.Decision, error) {
			got = r
			return permission.Allow, nil
		})}
	args := json.RawMessage(`{"path":"a.txt","content":"x"}`)
	v := g.Check(t.Context(), writeTool, tool.Call{ID: "c1", SessionID: "s", Arguments: args})
	if !v.Allowed || v.Level != permission.Workspace {
		t.Fatalf("verdict %+v", v)
	}
	if got.Tool != "file_write" || got.Title != "file_write" || string(got.Arguments) != string(args) || got.CallID != "c1" {
		t.Fatalf("request %+v", got)
	}
}

// A sub-agent's gate shares its parent's sticky answers both ways, and
// forgetting the child's leaves the parent's.
func TestGateSharesParentSticky(t *testing.T) {
	read := func() permission.Level { return permission.Read }
	asked := 0
	asker := permission.AskerFunc(func(context.Context, permission.Request) (permission.Decision, error) {
		asked++
		return permission.AlwaysAllow, nil
	})
	parent := &tool.Gate{Level: read, Approvals: on, Asker: asker}
	child := &tool.Gate{Level: read, Approvals: on, Asker: asker, Parent: parent}
	if v := child.Check(t.Context(), writeTool, tool.Call{}); !v.Allowed || asked != 1 {
		t.Fatalf("child's first call: %+v, asked %d", v, asked)
	}
	if v := parent.Check(t.Context(), writeTool, tool.Call{}); !v.Allowed || asked != 1 {
		t.Fatalf("parent after the child's always-allow: %+v, asked %d; want allowed without asking", v, asked)
	}
	child.Forget()
	sibling := &tool.Gate{Level: read, Approvals: on, Asker: asker, Parent: parent}
	if v := sibling.Check(t.Context(), writeTool, tool.Call{}); !v.Allowed || asked != 1 {
		t.Fatalf("a sibling after the child forgot: %+v, asked %d; want the parent's answer kept", v, asked)
	}
	parent.Forget()
	if v := sibling.Check(t.Context(), writeTool, tool.Call{}); !v.Allowed || asked != 2 {
		t.Fatalf("after the parent forgot: %+v, asked %d; want asked again", v, asked)
	}
}

// outsideTool is file_write whose calls with path "/outside" need the
// unrestricted level.
type outsideTool struct{ specTool }

func (outsideTool) CallLevel(c tool.Call) permission.Level {
	if strings.Contains(string(c.Arguments), "/outside") {
		return permission.Unrestricted
	}
	return permission.Workspace
}

// A call that needs more than its tool is asked about with approvals on,
// as any call above the session's level is, and its sticky answer is not
// the tool's; with approvals off the tool refuses it itself.
func TestGateCallLevel(t *testing.T) {
	var asked []permission.Request
	answer := permission.AlwaysAllow
	approvals := true
	g := &tool.Gate{Level: func() permission.Level { return permission.Workspace }, Approvals: func() bool { return approvals },
		Asker: permission.AskerFunc(func(_ context.Context, r permission.Request) (permission.Decision, error) {
			asked = append(asked, r)
			return answer, nil
		})}
	tl := outsideTool{writeTool}
	outside := tool.Call{Arguments: json.RawMessage(`{"path":"/outside/f"}`)}
	inside := tool.Call{Arguments: json.RawMessage(`{"path":"f"}`)}
	if v := g.Check(t.Context(), tl, inside); !v.Allowed || v.Level != permission.Workspace || len(asked) != 0 {
		t.Fatalf("inside: %+v asked %d", v, len(asked))
	}
	v := g.Check(t.Context(), tl, outside)
	if !v.Allowed || v.Level != permission.Unrestricted || len(asked) != 1 || asked[0].Needs != permission.Unrestricted || asked[0].Has != permission.Workspace {
		t.Fatalf("outside: %+v asked %+v", v, asked)
	}
	// Always-allow holds for such calls, asked no more...
	if v := g.Check(t.Context(), tl, outside); !v.Allowed || len(asked) != 1 {
		t.Fatalf("sticky: %+v asked %d", v, len(asked))
	}
	// ...and is not an always-allow of the tool at a lower level.
	rg := &tool.Gate{Level: func() permission.Level { return permission.Read }, Approvals: on, Parent: g,
		Asker: permission.AskerFunc(func(_ context.Context, r permission.Request) (permission.Decision, error) {
			asked = append(asked, r)
			return permission.Deny, nil
		})}
	if v := rg.Check(t.Context(), tl, inside); v.Allowed || len(asked) != 2 {
		t.Fatalf("the outside answer allowed the tool: %+v asked %d", v, len(asked))
	}
	// Approvals off: allowed at the session's level, for the tool to refuse.
	approvals = false
	g2 := &tool.Gate{Level: func() permission.Level { return permission.Workspace }, Approvals: func() bool { return approvals }}
	if v := g2.Check(t.Context(), tl, outside); !v.Allowed || v.Level != permission.Workspace {
		t.Fatalf("approvals off: %+v", v)
	}
}
