package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"meka.dev/meka/internal/imaging"
	"meka.dev/meka/model"
	"meka.dev/meka/tool"
)

// Past maxResultBytes of text a result's whole text goes to the
// scratchpad and the result keeps its first resultHeadSize bytes, as the
// file tools do.
const (
	maxResultBytes = 64 << 10
	resultHeadSize = 8 << 10
)

// result maps a server's answer to a tool result: text as text, images
// through the image pipeline when the model reads them, resources and
// links as the tags a prompt carries them in, structured content as JSON
// text, isError as a failed result.
func (t *Tool) result(call tool.Call, res *sdk.CallToolResult) tool.Result {
	vision := t.b != nil && t.b.Vision != nil && t.b.Vision()
	var parts []model.Part
	var texts []string
	addText := func(s string) {
		texts = append(texts, s)
		parts = append(parts, model.Text{Text: s})
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			addText(c.Text)
		case *sdk.ImageContent:
			parts, texts = t.image(parts, texts, c.Data, c.MIMEType, vision)
		case *sdk.AudioContent:
			addText(fmt.Sprintf("[audio (%s, %d bytes) the model cannot hear]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			addText(resourceLink(c))
		case *sdk.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
			case len(r.Blob) > 0 && strings.HasPrefix(r.MIMEType, "image/"):
				parts, texts = t.image(parts, texts, r.Blob, r.MIMEType, vision)
			case len(r.Blob) > 0:
				addText(fmt.Sprintf(`<resource uri="%s"%s encoding="base64"/>`, attr(r.URI), mimeAttr(r.MIMEType)))
			default:
				addText(fmt.Sprintf(`<resource uri="%s"%s>%s</resource>`, attr(r.URI), mimeAttr(r.MIMEType), r.Text))
			}
		default:
			addText(fmt.Sprintf("[content of a kind meka does not show: %T]", c))
		}
	}
	if res.StructuredContent != nil {
		if js, err := json.Marshal(res.StructuredContent); err == nil && !carried(texts, js) {
			addText(string(js))
		}
	}
	if len(parts) == 0 {
		addText("(no output)")
	}
	parts = t.bounded(call, parts)
	return tool.Result{Content: parts, IsError: res.IsError}
}

func (t *Tool) image(parts []model.Part, texts []string, data []byte, mime string, vision bool) ([]model.Part, []string) {
	if !vision {
		s := fmt.Sprintf("[image (%s, %d bytes) not shown: this model does not read images]", mime, len(data))
		return append(parts, model.Text{Text: s}), append(texts, s)
	}
	norm, typ, err := imaging.Normalize(data)
	if err != nil {
		s := fmt.Sprintf("[image (%s) not shown: %v]", mime, err)
		return append(parts, model.Text{Text: s}), append(texts, s)
	}
	return append(parts, model.Image{MediaType: typ, Data: norm, Name: t.rt.name}), texts
}

// carried reports whether one of texts is the JSON js already, as servers
// are asked to send structured content twice.
func carried(texts []string, js []byte) bool {
	var want bytes.Buffer
	if json.Compact(&want, js) != nil {
		return false
	}
	for _, s := range texts {
		var got bytes.Buffer
		if json.Compact(&got, []byte(s)) == nil && bytes.Equal(got.Bytes(), want.Bytes()) {
			return true
		}
		if s == string(js) {
			return true
		}
	}
	return false
}

func resourceLink(c *sdk.ResourceLink) string {
	return fmt.Sprintf(`<resource_link name="%s" uri="%s"%s>%s</resource_link>`, attr(c.Name), attr(c.URI), mimeAttr(c.MIMEType), c.Description)
}

func attr(s string) string { return html.EscapeString(s) }

func mimeAttr(m string) string {
	if m == "" {
		return ""
	}
	return ` mime="` + attr(m) + `"`
}

// bounded writes a result whose text is too large to the scratchpad and
// keeps its head; images pass as they are (the pipeline bounds them).
func (t *Tool) bounded(call tool.Call, parts []model.Part) []model.Part {
	var all strings.Builder
	for _, p := range parts {
		if x, ok := p.(model.Text); ok {
			all.WriteString(x.Text)
			all.WriteByte('\n')
		}
	}
	if all.Len() <= maxResultBytes {
		return parts
	}
	text := all.String()
	head := cutAtLine(text, resultHeadSize)
	note := fmt.Sprintf("[Output cut at %d of %d bytes.]", len(head), len(text))
	if path, err := t.scratch(call, text); err == nil {
		note = fmt.Sprintf("[Output cut at %d of %d bytes. The whole output is in the scratchpad file %s: read it with file_read (line, limit or pattern).]", len(head), len(text), path)
	}
	out := []model.Part{model.Text{Text: head + "\n" + note}}
	for _, p := range parts {
		if _, ok := p.(model.Image); ok {
			out = append(out, p)
		}
	}
	return out
}

func (t *Tool) scratch(call tool.Call, text string) (string, error) {
	if t.b == nil || t.b.ScratchDir == "" {
		return "", fmt.Errorf("write scratch file: no scratchpad")
	}
	if err := os.MkdirAll(t.b.ScratchDir, 0o700); err != nil {
		return "", fmt.Errorf("write scratch file: %w", err)
	}
	now := time.Now
	if t.b.Now != nil {
		now = t.b.Now
	}
	f, err := os.CreateTemp(t.b.ScratchDir, fmt.Sprintf("%s-%s-*.txt", t.rt.name, now().UTC().Format("20060102T150405")))
	if err != nil {
		return "", fmt.Errorf("write scratch file: %w", err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write scratch file: %w", err)
	}
	return f.Name(), nil
}

// cutAtLine returns the longest prefix of s within n bytes that ends at a
// line break, or n bytes on a rune boundary when the first line is longer.
func cutAtLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i > 0 {
		return s[:i+1]
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
