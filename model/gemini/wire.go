package gemini

import (
	"bytes"
	"encoding/json"
	"math"
)

// The Gemini wire format, only the fields meka sends and reads. Field
// order and omission are part of the contract (testdata/*.raw.json pins
// them): a prompt cache matches a prefix.

// head is the request without its contents, which are spliced in by hand
// so the parts replayed in them keep the bytes they came with.
type head struct {
	SystemInstruction *content    `json:"systemInstruction,omitempty"`
	Tools             []toolDecls `json:"tools,omitempty"`
	GenerationConfig  *genConfig  `json:"generationConfig,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []any  `json:"parts"`
}

type textPart struct {
	Text string `json:"text"`
}

type thoughtPart struct {
	Text    string `json:"text"`
	Thought bool   `json:"thought"`
}

type inlineDataPart struct {
	InlineData blob `json:"inlineData"`
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type functionCallPart struct {
	FunctionCall functionCall `json:"functionCall"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type functionResponsePart struct {
	FunctionResponse functionResponse `json:"functionResponse"`
}

type functionResponse struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type toolDecls struct {
	FunctionDeclarations []functionDecl `json:"functionDeclarations"`
}

type functionDecl struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

type genConfig struct {
	MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
	ThinkingConfig  *thinkingConfig `json:"thinkingConfig,omitempty"`
}

type thinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts"`
	ThinkingBudget  int    `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// chunk is one streamed GenerateContentResponse, or an error.
type chunk struct {
	Candidates []struct {
		Content struct {
			Parts []json.RawMessage `json:"parts"`
		} `json:"content"`
		FinishReason str `json:"finishReason"`
		Index        num `json:"index"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason str `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount        num `json:"promptTokenCount"`
		CachedContentTokenCount num `json:"cachedContentTokenCount"`
		CandidatesTokenCount    num `json:"candidatesTokenCount"`
		ThoughtsTokenCount      num `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion str             `json:"modelVersion"`
	Error        json.RawMessage `json:"error"`
}

// part is a response part as read.
type part struct {
	Text             *string `json:"text"`
	Thought          bool    `json:"thought"`
	ThoughtSignature str     `json:"thoughtSignature"`
	FunctionCall     *struct {
		ID   str             `json:"id"`
		Name str             `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
}

// str reads a value of another type as "".
type str string

func (s *str) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = str(v)
	}
	return nil
}

// num reads any JSON number, and anything else or out of range as 0.
type num int64

func (n *num) UnmarshalJSON(b []byte) error {
	var v float64
	if json.Unmarshal(b, &v) == nil && v >= 0 && v <= 1<<53 && !math.IsNaN(v) {
		*n = num(v)
	}
	return nil
}
