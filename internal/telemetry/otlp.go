package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The exporters here speak OTLP/HTTP with the JSON encoding the OTLP
// specification defines (ids in hex, 64-bit integers as strings). The
// official OTLP exporters encode protobuf through generated collector
// packages that link gRPC, its gateway and the protobuf runtime: 14 MB
// of binary and a millisecond of package initialisation in every meka
// start, telemetry on or off. The SDK's processors, batching and
// aggregation are the official SDK's.

// client posts OTLP/HTTP JSON to one URL.
type client struct {
	url     string
	headers map[string]string
	hc      *http.Client
}

func (c *client) post(ctx context.Context, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "meka")
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("otlp export to %s: %w", c.url, err)
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("otlp export to %s: HTTP %d: %s", c.url, res.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// ParseHeaders reads OTEL_EXPORTER_OTLP_HEADERS: key=value pairs,
// comma-separated, values percent-decoded as the specification says.
func ParseHeaders(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		if d, err := urlUnescape(strings.TrimSpace(v)); err == nil {
			v = d
		}
		out[strings.TrimSpace(k)] = v
	}
	return out
}

// spanExporter is an sdktrace.SpanExporter.
type spanExporter struct{ c *client }

func (e *spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	type scopeSpans struct {
		Scope scope  `json:"scope"`
		Spans []span `json:"spans"`
	}
	var res *resource.Resource
	byScope := map[string]*scopeSpans{}
	var order []string
	for _, s := range spans {
		res = s.Resource()
		sc := s.InstrumentationScope()
		ss, ok := byScope[sc.Name]
		if !ok {
			ss = &scopeSpans{Scope: scope{Name: sc.Name, Version: sc.Version}}
			byScope[sc.Name] = ss
			order = append(order, sc.Name)
		}
		ss.Spans = append(ss.Spans, toSpan(s))
	}
	var all []*scopeSpans
	for _, n := range order {
		all = append(all, byScope[n])
	}
	return e.c.post(ctx, map[string]any{"resourceSpans": []any{map[string]any{"resource": toResource(res), "scopeSpans": all}}})
}

func (e *spanExporter) Shutdown(context.Context) error { return nil }

type scope struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

type span struct {
	TraceID      string     `json:"traceId"`
	SpanID       string     `json:"spanId"`
	ParentSpanID string     `json:"parentSpanId,omitempty"`
	Name         string     `json:"name"`
	Kind         int        `json:"kind"`
	Start        string     `json:"startTimeUnixNano"`
	End          string     `json:"endTimeUnixNano"`
	Attributes   []keyValue `json:"attributes,omitempty"`
	Events       []event    `json:"events,omitempty"`
	Status       status     `json:"status"`
}

type event struct {
	Time       string     `json:"timeUnixNano"`
	Name       string     `json:"name"`
	Attributes []keyValue `json:"attributes,omitempty"`
}

type status struct {
	Code    int    `json:"code,omitempty"` // 1 ok, 2 error
	Message string `json:"message,omitempty"`
}

func toSpan(s sdktrace.ReadOnlySpan) span {
	sc := s.SpanContext()
	out := span{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), Name: s.Name(), Kind: int(s.SpanKind()),
		Start: nanos(s.StartTime()), End: nanos(s.EndTime()), Attributes: toAttributes(s.Attributes())}
	if p := s.Parent(); p.SpanID().IsValid() {
		out.ParentSpanID = p.SpanID().String()
	}
	for _, ev := range s.Events() {
		out.Events = append(out.Events, event{Time: nanos(ev.Time), Name: ev.Name, Attributes: toAttributes(ev.Attributes)})
	}
	switch s.Status().Code {
	case codes.Ok:
		out.Status.Code = 1
	case codes.Error:
		out.Status = status{Code: 2, Message: s.Status().Description}
	}
	return out
}

func nanos(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

type keyValue struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

func toAttributes(kvs []attribute.KeyValue) []keyValue {
	out := make([]keyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, keyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) any {
	switch v.Type() {
	case attribute.BOOL:
		return map[string]bool{"boolValue": v.AsBool()}
	case attribute.INT64:
		return map[string]string{"intValue": strconv.FormatInt(v.AsInt64(), 10)}
	case attribute.FLOAT64:
		return map[string]float64{"doubleValue": v.AsFloat64()}
	case attribute.STRINGSLICE:
		var vals []any
		for _, s := range v.AsStringSlice() {
			vals = append(vals, map[string]string{"stringValue": s})
		}
		return map[string]any{"arrayValue": map[string]any{"values": vals}}
	}
	return map[string]string{"stringValue": v.Emit()}
}

func toResource(r *resource.Resource) map[string]any {
	if r == nil {
		return map[string]any{}
	}
	return map[string]any{"attributes": toAttributes(r.Attributes())}
}

// metricExporter is an sdkmetric.Exporter of cumulative sums.
type metricExporter struct {
	c  *client
	mu sync.Mutex
}

func (e *metricExporter) Temporality(sdkmetric.InstrumentKind) metricdata.Temporality {
	return metricdata.CumulativeTemporality
}

func (e *metricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var scopes []any
	for _, sm := range rm.ScopeMetrics {
		var ms []any
		for _, m := range sm.Metrics {
			var points []any
			monotonic := false
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				monotonic = d.IsMonotonic
				for _, p := range d.DataPoints {
					points = append(points, map[string]any{"attributes": toAttributes(p.Attributes.ToSlice()),
						"startTimeUnixNano": nanos(p.StartTime), "timeUnixNano": nanos(p.Time), "asInt": strconv.FormatInt(p.Value, 10)})
				}
			case metricdata.Sum[float64]:
				monotonic = d.IsMonotonic
				for _, p := range d.DataPoints {
					points = append(points, map[string]any{"attributes": toAttributes(p.Attributes.ToSlice()),
						"startTimeUnixNano": nanos(p.StartTime), "timeUnixNano": nanos(p.Time), "asDouble": p.Value})
				}
			default:
				continue // meka records sums only
			}
			if len(points) == 0 {
				continue
			}
			ms = append(ms, map[string]any{"name": m.Name, "description": m.Description, "unit": m.Unit,
				"sum": map[string]any{"dataPoints": points, "aggregationTemporality": 2, "isMonotonic": monotonic}})
		}
		if len(ms) > 0 {
			scopes = append(scopes, map[string]any{"scope": scope{Name: sm.Scope.Name, Version: sm.Scope.Version}, "metrics": ms})
		}
	}
	if len(scopes) == 0 {
		return nil
	}
	return e.c.post(ctx, map[string]any{"resourceMetrics": []any{map[string]any{"resource": toResource(rm.Resource), "scopeMetrics": scopes}}})
}

func (e *metricExporter) ForceFlush(context.Context) error { return nil }
func (e *metricExporter) Shutdown(context.Context) error   { return nil }

func urlUnescape(s string) (string, error) { return url.QueryUnescape(s) }
