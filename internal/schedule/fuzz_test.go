package schedule_test

import (
	"reflect"
	"testing"

	"meka.dev/meka/internal/schedule"
)

// FuzzParseGate: a gate the model writes is parsed without panicking, and
// one that parses is stored in a form that parses back to the same gate.
func FuzzParseGate(f *testing.F) {
	for _, s := range []string{
		`{"check":{"command":"gh pr checks 123 | sort -u"},"when":"changed"}`,
		`{"check":{"tool":"mcp__bridge__unseen","arguments":{}},"when":{"at":"/chats","is":"not-empty"}}`,
		`{"check":{"tool":"probe"},"when":{"at":"/a~1b/0","is":{"equals":{"n":[1,2.5,"x",null,true]}}}}`,
		`{"check":{"command":"grep ERROR log"},"when":{"matches":"ERROR [0-9]+"}}`,
		`{"check":{"command":"x"},"when":"succeeded"}`,
		`{"check":{},"when":"changed"}`,
		`{"check":{"command":"x"},"when":{"at":"a","is":"empty"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := schedule.ParseGate(b)
		if err != nil {
			return
		}
		again, err := schedule.ParseGate([]byte(g.JSON()))
		if err != nil {
			t.Fatalf("stored form %s does not parse: %v", g.JSON(), err)
		}
		if !reflect.DeepEqual(g, again) {
			t.Fatalf("round trip changed the gate:\n%#v\n%#v", g, again)
		}
		_ = g.Describe()
	})
}
