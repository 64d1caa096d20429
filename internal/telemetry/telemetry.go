// Package telemetry exports what meka's sessions do as OpenTelemetry
// traces and metrics over OTLP/HTTP: a span per turn, per model call and
// per tool call, and counters of tokens and cost. It is the only package
// that imports OpenTelemetry, and does nothing unless Start is called:
// the composition root calls it only when an endpoint is configured
// ([telemetry] otlp_endpoint or OTEL_EXPORTER_OTLP_ENDPOINT).
//
// Attribute names follow the OpenTelemetry GenAI semantic conventions as
// of semantic-conventions c9e48b1d1^ (2026-05-05, status Development);
// cost, which they lack, is meka.cost.usd. Prompts, replies and tool
// arguments are recorded only with Options.LogContent.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options configure Start.
type Options struct {
	// Endpoint is the OTLP/HTTP base URL (http://127.0.0.1:4318); traces
	// go to Endpoint/v1/traces and metrics to Endpoint/v1/metrics.
	Endpoint string
	// Headers go with every export (OTEL_EXPORTER_OTLP_HEADERS: a
	// collector's auth).
	Headers map[string]string
	// LogContent records prompts, replies and tool arguments on spans.
	LogContent bool
	// Version is meka's version, for the service resource.
	Version string
}

// Telemetry is a running exporter. Its methods are safe for concurrent
// use.
type Telemetry struct {
	tp         *sdktrace.TracerProvider
	mp         *sdkmetric.MeterProvider
	tracer     trace.Tracer
	tokens     metric.Int64Counter
	cost       metric.Float64Counter
	logContent bool
}

// Start builds the exporters. Nothing is sent until there is something to
// send; Shutdown flushes what is left.
func Start(ctx context.Context, o Options) (*Telemetry, error) {
	base := strings.TrimRight(o.Endpoint, "/")
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telemetry: OTLP endpoint %q is not an http or https URL", o.Endpoint)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	te := &spanExporter{c: &client{url: base + "/v1/traces", headers: o.Headers, hc: hc}}
	me := &metricExporter{c: &client{url: base + "/v1/metrics", headers: o.Headers, hc: hc}}
	res := resource.NewSchemaless(attribute.String("service.name", "meka"), attribute.String("service.version", o.Version))
	t := &Telemetry{
		tp:         sdktrace.NewTracerProvider(sdktrace.WithBatcher(te), sdktrace.WithResource(res)),
		mp:         sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me)), sdkmetric.WithResource(res)),
		logContent: o.LogContent,
	}
	t.tracer = t.tp.Tracer("meka.dev/meka")
	meter := t.mp.Meter("meka.dev/meka")
	var err error
	if t.tokens, err = meter.Int64Counter("meka.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens of model calls, by gen_ai.token.type (input, output, cache_read, cache_write)")); err != nil {
		return nil, err
	}
	if t.cost, err = meter.Float64Counter("meka.cost", metric.WithUnit("USD"),
		metric.WithDescription("Estimated cost of model calls, from the configured and built-in prices")); err != nil {
		return nil, err
	}
	return t, nil
}

// Shutdown flushes and stops the exporters.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	return errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx))
}

// system is the gen_ai.provider.name of an adapter.
func system(name string) string {
	switch name {
	case "openai", "openai-responses":
		return "openai"
	case "gemini":
		return "gcp.gemini"
	}
	return name
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func itoa(n int) string { return fmt.Sprint(n) }
