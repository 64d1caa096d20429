package telemetry

import (
	"context"
	"encoding/json"
	"iter"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
)

// Session is one session's telemetry: a provider that spans its calls,
// and the observer of its engine's events that spans its turns and tool
// calls, the calls' spans children of their turn's.
type Session struct {
	t       *Telemetry
	id      string
	profile string
	model   string
	prov    model.Provider
	// level is the session's permission level now, for tool spans.
	level func() string

	mu    sync.Mutex
	turn  context.Context // the open turn's span, nil between turns
	tools map[string]trace.Span
}

// Provider returns the telemetry of a session on profile (of model),
// whose calls go to prov: a provider to build the session's engine with,
// then Bind to the session once it has an id.
func (t *Telemetry) Provider(profile, modelName string, prov model.Provider) *Session {
	return &Session{t: t, profile: profile, model: modelName, prov: prov, level: func() string { return "" }, tools: map[string]trace.Span{}}
}

// Bind names the session s observes; level reports its permission level
// now. It returns Observe, the session's subscriber.
func (s *Session) Bind(id string, level func() string) func(agent.Event) {
	s.mu.Lock()
	s.id, s.level = id, level
	s.mu.Unlock()
	return s.Observe
}

// Name reports the wrapped provider's.
func (s *Session) Name() string { return s.prov.Name() }

// Stream spans one model call: "chat MODEL", a client span under the
// turn's, with the tokens, cost and finish reason, or the error.
func (s *Session) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		parent := ctx
		s.mu.Lock()
		if s.turn != nil {
			parent = trace.ContextWithSpan(ctx, trace.SpanFromContext(s.turn))
		}
		id := s.id
		s.mu.Unlock()
		_, span := s.t.tracer.Start(parent, "chat "+s.model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.provider.name", system(s.prov.Name())),
			attribute.String("gen_ai.request.model", s.model),
			attribute.String("gen_ai.conversation.id", id),
			attribute.Bool("gen_ai.request.stream", true),
			attribute.String("meka.profile", s.profile),
		))
		if req.MaxOutputTokens > 0 {
			span.SetAttributes(attribute.Int("gen_ai.request.max_tokens", req.MaxOutputTokens))
		}
		if s.t.logContent {
			span.SetAttributes(attribute.String("gen_ai.system_instructions", req.System), attribute.String("gen_ai.input.messages", jsonText(req.Messages)))
		}
		defer span.End()
		// The model asked for, and the wire format: a fallback changes both.
		asked, wire := s.model, s.prov.Name()
		for ev, err := range s.prov.Stream(ctx, req) {
			switch ev := ev.(type) {
			case model.Completed:
				s.completed(span, ev.Response, asked, wire)
			case model.Switched:
				span.AddEvent("fallback", trace.WithAttributes(attribute.String("meka.fallback.from", ev.From.Name), attribute.String("meka.fallback.to", ev.To.Name),
					attribute.String("error.type", errorType(ev.Err))))
				if ev.To.Model != "" {
					asked = ev.To.Model
				}
				wire = ev.To.Provider.Name()
				span.SetAttributes(attribute.String("meka.profile", ev.To.Name), attribute.String("gen_ai.request.model", asked),
					attribute.String("gen_ai.provider.name", system(wire)))
			}
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
				span.SetAttributes(attribute.String("error.type", errorType(err)))
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

func (s *Session) completed(span trace.Span, r model.Response, asked, wire string) {
	u := r.Usage
	span.SetAttributes(
		attribute.String("gen_ai.response.model", r.Model),
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{string(r.Stop)}),
		// Input counts cached tokens too, as the conventions ask.
		attribute.Int("gen_ai.usage.input_tokens", u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens),
		attribute.Int("gen_ai.usage.output_tokens", u.OutputTokens),
		attribute.Int("gen_ai.usage.cache_read.input_tokens", u.CacheReadTokens),
		attribute.Int("gen_ai.usage.cache_creation.input_tokens", u.CacheWriteTokens),
		attribute.Float64("meka.cost.usd", u.Cost),
	)
	if s.t.logContent {
		span.SetAttributes(attribute.String("gen_ai.output.messages", jsonText([]model.Message{r.Message})))
	}
	ctx := context.Background()
	attrs := func(typ string) metric.AddOption {
		return metric.WithAttributes(attribute.String("gen_ai.token.type", typ), attribute.String("gen_ai.request.model", asked),
			attribute.String("gen_ai.provider.name", system(wire)))
	}
	s.t.tokens.Add(ctx, int64(u.InputTokens), attrs("input"))
	s.t.tokens.Add(ctx, int64(u.OutputTokens), attrs("output"))
	s.t.tokens.Add(ctx, int64(u.CacheReadTokens), attrs("cache_read"))
	s.t.tokens.Add(ctx, int64(u.CacheWriteTokens), attrs("cache_write"))
	s.t.cost.Add(ctx, u.Cost, metric.WithAttributes(attribute.String("gen_ai.request.model", asked), attribute.String("gen_ai.provider.name", system(wire))))
}

// Observe takes the session's engine events: a turn is an
// "invoke_agent meka" span, a tool call an "execute_tool NAME" span
// under it.
func (s *Session) Observe(ev agent.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev := ev.(type) {
	case agent.TurnStarted:
		if s.turn != nil {
			trace.SpanFromContext(s.turn).End()
		}
		ctx, span := s.t.tracer.Start(context.Background(), "invoke_agent meka", trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "invoke_agent"),
			attribute.String("gen_ai.agent.name", "meka"),
			attribute.String("gen_ai.conversation.id", s.id),
			attribute.Int64("meka.turn", ev.Turn),
			attribute.String("meka.source", string(ev.Input.Source)),
		))
		if s.t.logContent {
			span.SetAttributes(attribute.String("gen_ai.input.messages", jsonText(ev.Input.Parts)))
		}
		s.turn = ctx
	case agent.ToolCallStarted:
		parent := context.Background()
		if s.turn != nil {
			parent = s.turn
		}
		_, span := s.t.tracer.Start(parent, "execute_tool "+ev.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", ev.Name),
			attribute.String("gen_ai.tool.call.id", ev.CallID),
			attribute.String("meka.tool.kind", string(ev.Kind)),
			attribute.String("meka.permission.level", s.level()),
		))
		if s.t.logContent {
			span.SetAttributes(attribute.String("gen_ai.tool.call.arguments", string(ev.Arguments)))
		}
		s.tools[ev.CallID] = span
	case agent.ToolCallFinished:
		span, ok := s.tools[ev.CallID]
		if !ok {
			return
		}
		delete(s.tools, ev.CallID)
		span.SetAttributes(attribute.String("meka.tool.outcome", ev.Result.Status))
		if ev.Result.Status != "ok" {
			span.SetStatus(codes.Error, ev.Result.Status)
			span.SetAttributes(attribute.String("error.type", ev.Result.Status))
		}
		if s.t.logContent {
			span.SetAttributes(attribute.String("gen_ai.tool.call.result", jsonText(ev.Result.Content)))
		}
		span.End()
	case agent.TurnEnded:
		if s.turn == nil {
			return
		}
		span := trace.SpanFromContext(s.turn)
		r := ev.Result
		span.SetAttributes(attribute.String("meka.stop", string(r.Stop)), attribute.Int("meka.rounds", r.Rounds),
			attribute.Int("gen_ai.usage.input_tokens", r.Usage.InputTokens+r.Usage.CacheReadTokens+r.Usage.CacheWriteTokens),
			attribute.Int("gen_ai.usage.output_tokens", r.Usage.OutputTokens), attribute.Float64("meka.cost.usd", r.Usage.Cost))
		if r.Err != nil {
			span.RecordError(r.Err)
			span.SetStatus(codes.Error, r.Err.Error())
		}
		if s.t.logContent {
			span.SetAttributes(attribute.String("gen_ai.output.messages", r.Reply))
		}
		for id, ts := range s.tools {
			ts.End()
			delete(s.tools, id)
		}
		span.End()
		s.turn = nil
	}
}

// errorType is error.type: the HTTP status of a provider's error, else
// the Go type.
func errorType(err error) string {
	if err == nil {
		return ""
	}
	var pe *model.Error
	if errorsAs(err, &pe) {
		if pe.Status != 0 {
			return itoa(pe.Status)
		}
		return "connection"
	}
	return "_OTHER"
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
