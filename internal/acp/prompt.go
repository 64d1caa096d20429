package acp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"meka.dev/meka/internal/imaging"
	"path"
	"strings"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// errCancelled is the cause of a turn canceled by session/cancel.
var errCancelled = errors.New("cancelled by the client")

// prompt runs a turn; reqID is the request's id, under which the ingress
// reader recorded it.
func (s *server) prompt(ctx context.Context, reqID string, p *PromptRequest) (*PromptResponse, error) {
	e, err := s.ensure(ctx, p.SessionID)
	if err != nil {
		s.arrivals.take(reqID)
		return nil, err
	}
	e.mu.Lock()
	t := s.arrivals.take(reqID)
	for e.inFlight || e.switching {
		switch {
		case t.latched:
			// Cancelled before it started, and another prompt has the
			// session: it never runs.
			e.mu.Unlock()
			return &PromptResponse{StopReason: "cancelled", Usage: usage(model.Usage{})}, nil
		case !e.inFlight || !t.cancelsTurn(e.seq):
			e.mu.Unlock()
			return nil, errBusy("")
		}
		// Sent after a cancel of the turn in flight (what an editor does
		// when the user types after Stop): it queues behind that turn's
		// response rather than racing it.
		answered := e.answered
		e.mu.Unlock()
		select {
		case <-answered:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		// A cancel read while it waited is for it.
		t.latched = t.latched || s.arrivals.cancelledSince(e.id, t.seq)
		e.mu.Lock()
	}
	answered := make(chan struct{})
	e.inFlight, e.latched, e.seq, e.answered = true, t.latched, t.seq, answered
	hs := e.hs
	e.mu.Unlock()
	jsonrpc.AfterResponse(ctx, func() { close(answered) })
	defer func() {
		e.mu.Lock()
		e.inFlight, e.latched, e.cancel = false, false, nil
		e.mu.Unlock()
	}()
	hs.Touch()

	// Bounded before anything is decoded or copied, and again once images
	// are converted (a converted image may be larger than it came).
	limit := hs.Profile().RequestLimit()
	if n := blocksSize(p.Prompt); n > limit {
		return nil, tooLarge(n, limit)
	}
	parts, err := promptParts(p.Prompt, hs.Profile().Vision)
	if err != nil {
		return nil, err
	}
	if n := partsSize(parts); n > limit {
		return nil, tooLarge(n, limit)
	}
	// The palette is refreshed at the top of every prompt.
	s.notify(ctx, e.id, AvailableCommandsUpdate{AvailableCommands: commands(hs)})
	cmd, args, local := localCommand(p.Prompt)
	if local {
		for _, b := range p.Prompt {
			if b.Type == "image" {
				return nil, invalidParams("/%s takes no image: nothing would read it", cmd)
			}
		}
		if cmd != "compact" {
			return e.runLocal(ctx, cmd, args), nil
		}
	}

	turnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	e.mu.Lock()
	e.cancel = cancel
	if e.latched {
		cancel(errCancelled)
	}
	e.mu.Unlock()
	if local {
		// A compaction is stopped by session/cancel as a turn is.
		return e.compactNow(turnCtx, args), nil
	}

	// _meta.pin keeps the words verbatim through every compaction.
	pin, _ := p.Meta["pin"].(bool)
	res, err := hs.Run(turnCtx, session.UserMessage{Parts: parts, Pinned: pin})
	if errors.Is(err, host.ErrClosed) {
		// Swept between lookup and run: take it up again, once, as a
		// registered entry a cancel can find.
		var again *entry
		if again, err = s.ensure(ctx, e.id); err == nil {
			again.mu.Lock()
			again.inFlight, again.cancel = true, cancel
			again.mu.Unlock()
			defer func() {
				again.mu.Lock()
				again.inFlight, again.cancel = false, nil
				again.mu.Unlock()
			}()
			e = again
			res, err = e.session().Run(turnCtx, session.UserMessage{Parts: parts, Pinned: pin})
		}
	}
	if turnCtx.Err() != nil || res.Stop == agent.StopCanceled {
		return &PromptResponse{StopReason: "cancelled", Usage: usage(res.Usage)}, nil
	}
	if err != nil || res.Stop == agent.StopFailed {
		if err == nil {
			err = res.Err
		}
		return nil, s.turnError(e.id, err)
	}
	return &PromptResponse{StopReason: stopReason(res.Stop), Usage: usage(res.Usage)}, nil
}

// stopReason maps a turn's end to ACP's five reasons; meka's own limits
// are model requests in ACP's terms, and a repeat stop ends the turn.
func stopReason(r agent.StopReason) string {
	switch r {
	case agent.StopMaxTokens:
		return "max_tokens"
	case agent.StopMaxTurns, agent.StopMaxToolCalls:
		return "max_turn_requests"
	case agent.StopRefusal:
		return "refusal"
	case agent.StopCanceled:
		return "cancelled"
	}
	return "end_turn"
}

// usage is what a turn spent, as the protocol counts it.
func usage(u model.Usage) *Usage {
	out := &Usage{
		TotalTokens:  u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens,
		InputTokens:  u.InputTokens,
		OutputTokens: u.OutputTokens,
	}
	r, w := u.CacheReadTokens, u.CacheWriteTokens
	out.CachedReadTokens, out.CachedWriteTokens = &r, &w
	// ACP's Usage has no cost field; a priced turn's spend rides in _meta,
	// in the shape usage_update.cost has.
	if u.Cost > 0 {
		out.Meta = Meta{"cost": Cost{Amount: u.Cost, Currency: "USD"}}
	}
	return out
}

// promptParts converts a prompt's blocks, in place: text as is,
// resources as the parts the model reads as tags, images only with
// vision, audio never.
func promptParts(blocks []ContentBlock, vision bool) (model.Parts, error) {
	if len(blocks) == 0 {
		return nil, invalidParams("prompt is empty")
	}
	parts := make(model.Parts, 0, len(blocks))
	for i, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, model.Text{Text: b.Text})
		case "resource_link":
			if b.URI == "" {
				return nil, invalidParams("prompt[%d]: resource_link needs a uri", i)
			}
			name := b.Name
			if name == "" {
				name = lastSegment(b.URI)
			}
			parts = append(parts, model.Resource{URI: b.URI, Name: name, MimeType: b.MimeType, Description: b.Description})
		case "resource":
			r := b.Resource
			if r == nil || r.URI == "" {
				return nil, invalidParams("prompt[%d]: resource needs contents with a uri", i)
			}
			switch {
			case r.Text != nil:
				parts = append(parts, model.Resource{URI: r.URI, Name: lastSegment(r.URI), MimeType: r.MimeType, Text: *r.Text})
			case r.Blob != nil:
				// The payload is not inlined; the model reads a marker, and
				// load replays it as a link.
				parts = append(parts, model.Resource{URI: r.URI, Name: lastSegment(r.URI), MimeType: r.MimeType, Blob: true})
			default:
				return nil, invalidParams("prompt[%d]: resource has neither text nor blob", i)
			}
		case "image":
			if !vision {
				return nil, invalidParams("prompt[%d]: this session's profile does not accept images (vision is off)", i)
			}
			img, err := decodeImage(b)
			if err != nil {
				return nil, invalidParams("prompt[%d]: %v", i, err)
			}
			parts = append(parts, img)
		case "audio":
			return nil, invalidParams("prompt[%d]: audio is not supported", i)
		default:
			return nil, invalidParams("prompt[%d]: unknown content type %q", i, b.Type)
		}
	}
	return parts, nil
}

func decodeImage(b ContentBlock) (model.Image, error) {
	if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(b.MimeType)), "image/") {
		return model.Image{}, fmt.Errorf("%q is not an image type", b.MimeType)
	}
	if base64.StdEncoding.DecodedLen(len(b.Data)) > imaging.MaxInputBytes+3 {
		return model.Image{}, fmt.Errorf("image is larger than %d MiB", imaging.MaxInputBytes>>20)
	}
	data, err := base64.StdEncoding.DecodeString(b.Data)
	if err != nil {
		return model.Image{}, fmt.Errorf("image data is not base64: %v", err)
	}
	// The pipeline converts formats models do not read and scales down
	// what is too large; the declared type is not trusted.
	data, mt, err := imaging.Normalize(data)
	if err != nil {
		return model.Image{}, err
	}
	name := ""
	if b.URI != "" {
		name = lastSegment(b.URI)
	}
	return model.Image{MediaType: mt, Data: data, Name: name}, nil
}

// lastSegment names a resource by the last segment of its URI.
func lastSegment(uri string) string {
	u := strings.TrimRight(uri, "/")
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if s := path.Base(u); s != "." && s != "/" && s != "" {
		return s
	}
	return uri
}

func escapeAttr(s string) string {
	return strings.NewReplacer(`&`, "&amp;", `"`, "&quot;", `<`, "&lt;", `>`, "&gt;").Replace(s)
}

func tooLarge(n, limit int) error {
	return invalidParams("the prompt is %d bytes, over this profile's max_request_bytes of %d: attach less, or link files instead of embedding them", n, limit)
}

// blocksSize is the bytes a prompt's blocks would add to a request, as
// sent: text, embedded text and images decoded.
func blocksSize(blocks []ContentBlock) int {
	n := 0
	for _, b := range blocks {
		n += len(b.Text) + base64.StdEncoding.DecodedLen(len(b.Data))
		if b.Resource != nil && b.Resource.Text != nil {
			n += len(*b.Resource.Text) + len(b.Resource.URI)
		}
	}
	return n
}

// partsSize is the bytes a prompt adds to a request: its text, embedded
// resources and images.
func partsSize(parts model.Parts) int {
	n := 0
	for _, p := range parts {
		switch p := p.(type) {
		case model.Text:
			n += len(p.Text)
		case model.Resource:
			n += len(p.Text) + len(p.URI)
		case model.Image:
			n += len(p.Data)
		}
	}
	return n
}
