package script_test

import (
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
)

// FuzzParse: whatever Parse accepts plays without panicking, and every
// response it plays can be stored.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		twoRounds,
		`{"rounds":[{"error":{"status":503,"retry_after":"Sat, 01 Jan 2000 00:00:05 GMT"}}]}`,
		`{"rounds":[{"tool_calls":[{"id":"c","name":"n","raw_arguments":"{\"a\":"}],"stop":"refusal"}]}`,
		`{"rounds":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := script.Parse(b)
		if err != nil {
			return
		}
		p := script.New(s)
		for range s.Rounds {
			resp, err := model.Collect(p.Stream(t.Context(), &model.Request{}), nil)
			if err != nil {
				continue
			}
			if _, err := resp.Message.Parts.MarshalJSON(); err != nil {
				t.Fatalf("played a message that cannot be stored: %v", err)
			}
		}
	})
}
