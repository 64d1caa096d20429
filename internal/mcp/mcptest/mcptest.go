// Package mcptest is a small MCP server built on the official Go SDK for
// meka's tests: tools that echo, fail, hang, answer hugely, return an
// image or structured content, ask the user (form and url elicitation),
// change the tool list, or end the process; names that collide once
// sanitised; a schema meka's validator cannot express; and a prompt.
package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options shape a server.
type Options struct {
	// Name is the server's implementation name.
	Name string
	// Hung, when set, is told "entered" when a hanging call starts and
	// "cancelled" when it is cancelled; tests wait on it.
	Hung func(string)
}

// New returns the test server.
func New(o Options) *sdk.Server {
	if o.Name == "" {
		o.Name = "mcptest"
	}
	s := sdk.NewServer(&sdk.Implementation{Name: o.Name, Version: "1.0.0"}, nil)
	obj := func(props string, required ...string) json.RawMessage {
		req, _ := json.Marshal(required)
		if required == nil {
			req = []byte("[]")
		}
		return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `}`)
	}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	args := func(req *sdk.CallToolRequest) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &m)
		return m
	}
	s.AddTool(&sdk.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: obj(`"text":{"type":"string"}`, "text"),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("echo: " + fmt.Sprint(args(req)["text"])), nil
		})
	s.AddTool(&sdk.Tool{Name: "write", Description: "Pretend to write.", InputSchema: obj(`"path":{"type":"string"}`, "path")},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("wrote " + fmt.Sprint(args(req)["path"])), nil
		})
	s.AddTool(&sdk.Tool{Name: "fail", Description: "Always fails.", InputSchema: obj(``)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			r := text("the widget is broken")
			r.IsError = true
			return r, nil
		})
	s.AddTool(&sdk.Tool{Name: "hang", Description: "Never answers.", InputSchema: obj(``)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if o.Hung != nil {
				o.Hung("entered")
			}
			<-ctx.Done()
			if o.Hung != nil {
				o.Hung("cancelled")
			}
			return nil, ctx.Err()
		})
	s.AddTool(&sdk.Tool{Name: "huge", Description: "Answers with n bytes.", InputSchema: obj(`"n":{"type":"integer"}`, "n")},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			n, _ := args(req)["n"].(float64)
			line := strings.Repeat("x", 99) + "\n"
			return text(strings.Repeat(line, int(n)/100+1)[:int(n)]), nil
		})
	s.AddTool(&sdk.Tool{Name: "picture", Description: "A red square.", InputSchema: obj(``)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{Data: RedSquare(), MIMEType: "image/png"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "structured", Description: "Structured content.", InputSchema: obj(``)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.ResourceLink{URI: "file:///notes.txt", Name: "notes"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://a", MIMEType: "text/plain", Text: "alpha"}}},
				StructuredContent: map[string]any{"chats": []any{"x"}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "ask", Description: "Ask the user.", InputSchema: obj(`"mode":{"type":"string","enum":["form","url"]}`, "mode")},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			p := &sdk.ElicitParams{Mode: "form", Message: "What is your name?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}
			if args(req)["mode"] == "url" {
				p = &sdk.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/login", ElicitationID: "e1"}
			}
			// The current protocol asks through the result (multi
			// round-trip); the SDK sends older clients elicitation/create.
			res, ok := req.Params.InputResponses["q"].(*sdk.ElicitResult)
			if !ok {
				return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"q": p}}, nil
			}
			js, _ := json.Marshal(res.Content)
			return text(res.Action + " " + string(js)), nil
		})
	s.AddTool(&sdk.Tool{Name: "survey", Description: "Ask the user a form with a field of each kind.", InputSchema: obj(``)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, ok := req.Params.InputResponses["q"].(*sdk.ElicitResult)
			if !ok {
				return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"q": &sdk.ElicitParams{Mode: "form",
					Message: "Tell us about you.", RequestedSchema: json.RawMessage(SurveySchema)}}}, nil
			}
			js, _ := json.Marshal(res.Content)
			return text(res.Action + " " + string(js)), nil
		})
	s.AddTool(&sdk.Tool{Name: "grow", Description: "Adds the tool added.", InputSchema: obj(``)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			s.AddTool(&sdk.Tool{Name: "added", Description: "Added later.", InputSchema: obj(``)},
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return text("added ran"), nil
				})
			return text("grown"), nil
		})
	s.AddTool(&sdk.Tool{Name: "die", Description: "Ends the server.", InputSchema: obj(``)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&sdk.Tool{Name: "a.b", Description: "Dotted.", InputSchema: obj(``)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("dotted"), nil })
	s.AddTool(&sdk.Tool{Name: "a_b", Description: "Underscored.", InputSchema: obj(``)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("underscored"), nil
		})
	s.AddTool(&sdk.Tool{Name: "refs", Description: "A schema with $defs.",
		InputSchema: json.RawMessage(`{"type":"object","$defs":{"n":{"type":"integer"}},"properties":{"n":{"$ref":"#/$defs/n"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("refs " + string(req.Params.Arguments)), nil
		})
	s.AddPrompt(&sdk.Prompt{Name: "greet", Description: "Greet someone.", Arguments: []*sdk.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user",
				Content: &sdk.TextContent{Text: "Say hello to " + req.Params.Arguments["who"] + "."}}}}, nil
		})
	return s
}

// SurveySchema is the form the survey tool asks: a field of each kind
// elicitation allows.
const SurveySchema = `{"type":"object","properties":{` +
	`"name":{"type":"string","title":"Name","description":"What to call you","minLength":2},` +
	`"age":{"type":"integer","minimum":0,"maximum":150},` +
	`"color":{"type":"string","enum":["red","green","blue"],"default":"blue"},` +
	`"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]},` +
	`"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"maxItems":2},` +
	`"height":{"type":"number","description":"In metres"},` +
	`"news":{"type":"boolean","title":"Newsletter"}},` +
	`"required":["name","age"]}`

// Handler serves s over streamable HTTP.
func Handler(s *sdk.Server) http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
}

// AddText adds a tool called name that takes no arguments and answers
// text, for tests that change the list (s.RemoveTools takes one away).
func AddText(s *sdk.Server, name, description, text string) {
	s.AddTool(&sdk.Tool{Name: name, Description: description, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
		})
}

// RedSquare is a 4x4 red PNG.
func RedSquare() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for x := range 4 {
		for y := range 4 {
			img.Set(x, y, color.RGBA{R: 255, A: 255})
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}
