package model

// Event is one element of a model stream. The variants are TextDelta,
// ThinkingDelta, ToolCallDelta and Completed.
type Event interface{ isEvent() }

// TextDelta is a piece of the reply's text.
type TextDelta struct{ Text string }

// ThinkingDelta is a piece of the model's reasoning.
type ThinkingDelta struct{ Text string }

// ToolCallDelta is a piece of a tool call being streamed: the first delta
// of a call carries its ID and Name, later ones argument text.
type ToolCallDelta struct {
	Index     int
	ID, Name  string
	Arguments string
}

// Completed ends a successful stream with the assembled response.
type Completed struct{ Response Response }

func (TextDelta) isEvent()     {}
func (ThinkingDelta) isEvent() {}
func (ToolCallDelta) isEvent() {}
func (Completed) isEvent()     {}
