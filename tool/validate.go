package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

func compileSchema(s Spec) (*jsonschema.Schema, error) {
	if len(s.Schema) == 0 {
		return nil, errors.New("compile schema: tool has no schema")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.Schema))
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	url := "meka:tool/" + s.Name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return sch, nil
}

// Validator checks call arguments against tool schemas, compiling each
// schema once. It is safe for concurrent use once built.
type Validator struct {
	schemas map[string]*jsonschema.Schema
}

// NewValidator compiles the schemas of tools.
func NewValidator(tools []Tool) (*Validator, error) {
	v := &Validator{schemas: make(map[string]*jsonschema.Schema, len(tools))}
	for _, t := range tools {
		sch, err := compileSchema(t.Spec())
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Spec().Name, err)
		}
		v.schemas[t.Spec().Name] = sch
	}
	return v, nil
}

// Validate returns nil when args satisfy the schema of the tool called
// name, else an error written for the model to correct its call.
func (v *Validator) Validate(name string, args json.RawMessage) error {
	sch, ok := v.schemas[name]
	if !ok {
		return fmt.Errorf("unknown tool %q", name)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("arguments do not match the schema:\n%s", describe(ve))
		}
		return fmt.Errorf("arguments do not match the schema: %v", err)
	}
	return nil
}

// describe lists the leaf causes of a validation error, one per line, each
// with the JSON pointer of the offending argument.
func describe(ve *jsonschema.ValidationError) string {
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			lines = append(lines, fmt.Sprintf("- at %s: %s", loc, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(lines, "\n")
}
