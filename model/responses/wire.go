package responses

import (
	"bytes"
	"encoding/json"
	"math"
)

// The Responses API wire format, only the fields meka sends and reads.
// Field order and omission are part of the contract (testdata/*.raw.json
// pins them): a prompt cache matches a prefix.

// head is the request without its input, which is spliced in by hand so
// the reasoning items replayed in it keep the bytes they came with.
type head struct {
	Model           string     `json:"model,omitempty"`
	Instructions    string     `json:"instructions,omitempty"`
	Tools           []tool     `json:"tools,omitempty"`
	Reasoning       *reasoning `json:"reasoning,omitempty"`
	Include         []string   `json:"include"`
	MaxOutputTokens int        `json:"max_output_tokens,omitempty"`
	PromptCacheKey  string     `json:"prompt_cache_key,omitempty"`
	Store           bool       `json:"store"`
	Stream          bool       `json:"stream"`
}

type reasoning struct {
	Effort  string `json:"effort"`
	Summary string `json:"summary"`
}

type tool struct {
	Type        string `json:"type"` // "function"
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the schema with its keys sorted: model.SortedSchema's
	// bytes, or the schema decoded into a map.
	Parameters any `json:"parameters"`
	// Strict is always sent false: the API's default is true, which
	// refuses schemas that do not close every object.
	Strict bool `json:"strict"`
}

// Input items.

type message struct {
	Type    string `json:"type"` // "message"
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type inputText struct {
	Type string `json:"type"` // "input_text" or "output_text"
	Text string `json:"text"`
}

type inputImage struct {
	Type     string `json:"type"` // "input_image"
	ImageURL string `json:"image_url"`
}

type functionCall struct {
	Type      string `json:"type"` // "function_call"
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type functionCallOutput struct {
	Type   string `json:"type"` // "function_call_output"
	CallID string `json:"call_id"`
	// Output is a string, or an array of inputText and inputImage when
	// the result holds an image.
	Output any `json:"output"`
}

// encode marshals v without HTML escaping and without a trailing newline.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Stream events: every event is one JSON object with a "type"; which of
// these fields it has depends on the type.
type event struct {
	Type        string          `json:"type"`
	Response    *response       `json:"response"`
	OutputIndex num             `json:"output_index"`
	Item        json.RawMessage `json:"item"`
	Delta       str             `json:"delta"`
	// An error event's own fields.
	Code    str `json:"code"`
	Message str `json:"message"`
}

type response struct {
	Model             str `json:"model"`
	Status            str `json:"status"`
	IncompleteDetails *struct {
		Reason str `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    str `json:"code"`
		Message str `json:"message"`
	} `json:"error"`
	Usage *usage `json:"usage"`
}

type usage struct {
	InputTokens        num `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     num `json:"cached_tokens"`
		CacheWriteTokens num `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens num `json:"output_tokens"`
}

// item is an output item as read: a message, function call or reasoning.
type item struct {
	Type      str `json:"type"`
	ID        str `json:"id"`
	CallID    str `json:"call_id"`
	Name      str `json:"name"`
	Arguments str `json:"arguments"`
	Content   []struct {
		Type    str `json:"type"`
		Text    str `json:"text"`
		Refusal str `json:"refusal"`
	} `json:"content"`
	Summary []struct {
		Text str `json:"text"`
	} `json:"summary"`
}

// str reads a value of another type as "", so one odd field does not
// fail a whole event.
type str string

func (s *str) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = str(v)
	}
	return nil
}

// num reads any JSON number and anything else, or out of range, as 0.
type num int64

func (n *num) UnmarshalJSON(b []byte) error {
	var v float64
	if json.Unmarshal(b, &v) == nil && v >= 0 && v <= 1<<53 && !math.IsNaN(v) {
		*n = num(v)
	}
	return nil
}
