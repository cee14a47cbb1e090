package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// DefaultServiceName is service.name when OTEL_SERVICE_NAME is not set.
const DefaultServiceName = "incidentlib"

// Config is the tracing configuration, read from the OTEL_* variables by
// ConfigFromEnv. The SDK's exporters also read the OTEL_EXPORTER_OTLP_*
// variables not named here (timeout, compression, certificates) from the
// process environment themselves.
type Config struct {
	// Endpoint is the OTLP traces endpoint URL as the exporter is given
	// it; empty: tracing off.
	Endpoint string
	// Protocol is "http/protobuf" (the specification's default) or "grpc".
	Protocol string
	// Headers are sent with every export (OTEL_EXPORTER_OTLP_HEADERS,
	// OTEL_EXPORTER_OTLP_TRACES_HEADERS).
	Headers map[string]string
	// Sampler samples root spans (OTEL_TRACES_SAMPLER, _ARG).
	Sampler sdktrace.Sampler
	// ServiceName is the resource's service.name.
	ServiceName string
	// ResourceAttributes are OTEL_RESOURCE_ATTRIBUTES.
	ResourceAttributes []attribute.KeyValue
}

// ConfigFromEnv reads the OTEL_* variables with getenv. Tracing is on
// (Endpoint not empty) when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT is set; OTEL_SDK_DISABLED=true turns it off.
// Values that make no sense are refused with an error naming the variable:
// an unknown protocol or sampler, a sampler argument that is not a ratio
// in [0, 1], an endpoint that is not an http(s) URL, malformed headers.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var c Config
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return c, nil
	}
	protoVar := "OTEL_EXPORTER_OTLP_PROTOCOL"
	c.Protocol = strings.TrimSpace(getenv(protoVar))
	if p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")); p != "" {
		protoVar, c.Protocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", p
	}
	switch c.Protocol {
	case "":
		c.Protocol = "http/protobuf"
	case "http/protobuf", "grpc":
	case "http/json":
		return c, fmt.Errorf("%s=http/json: the OpenTelemetry Go exporter has no JSON encoding; use http/protobuf or grpc", protoVar)
	default:
		return c, fmt.Errorf("%s=%q: unknown protocol; use http/protobuf (the default) or grpc", protoVar, c.Protocol)
	}
	if e := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); e != "" {
		if err := checkURL("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", e); err != nil {
			return c, err
		}
		c.Endpoint = e // used as it is, per the specification
	} else if e := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); e != "" {
		if err := checkURL("OTEL_EXPORTER_OTLP_ENDPOINT", e); err != nil {
			return c, err
		}
		c.Endpoint = e
		if c.Protocol == "http/protobuf" { // the signal's path is appended to the base
			c.Endpoint = strings.TrimSuffix(e, "/") + "/v1/traces"
		}
	}
	if c.Endpoint == "" {
		return Config{}, nil
	}
	var err error
	c.Headers = map[string]string{}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if err = parseList(v, getenv(v), func(k, val string) { c.Headers[k] = val }); err != nil {
			return c, err
		}
	}
	if c.Sampler, err = samplerFromEnv(getenv); err != nil {
		return c, err
	}
	c.ServiceName = strings.TrimSpace(getenv("OTEL_SERVICE_NAME"))
	if err = parseList("OTEL_RESOURCE_ATTRIBUTES", getenv("OTEL_RESOURCE_ATTRIBUTES"), func(k, val string) {
		if k == "service.name" && c.ServiceName == "" {
			c.ServiceName = val
		}
		c.ResourceAttributes = append(c.ResourceAttributes, attribute.String(k, val))
	}); err != nil {
		return c, err
	}
	if c.ServiceName == "" {
		c.ServiceName = DefaultServiceName
	}
	return c, nil
}

func checkURL(name, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s=%q: not an http:// or https:// URL", name, v)
	}
	return nil
}

// parseList parses the W3C-baggage-like k=v,k=v lists of the OTEL_*
// variables (values percent-encoded).
func parseList(name, v string, set func(k, v string)) error {
	for _, kv := range strings.Split(v, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, val, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return fmt.Errorf("%s: %q is not key=value", name, strings.TrimSpace(kv))
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return fmt.Errorf("%s: value of %q is not percent-encoded: %v", name, k, err)
		}
		set(k, dec)
	}
	return nil
}

func samplerFromEnv(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER"))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: not a ratio between 0 and 1", arg)
		}
		return r, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(r), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: unknown sampler; use always_on, always_off, traceidratio or their parentbased_ forms", name)
}

// Setup reads the OTEL_* variables with getenv and, when an endpoint is
// set, builds the OTLP exporter (HTTP with protobuf, or gRPC), a batching
// tracer provider and the W3C propagator, and turns every hook of this
// package on. Without an endpoint it creates nothing and tracing stays
// off. It returns the shutdown that flushes the spans still batched: call
// it once at exit. Nonsensical values are refused (ConfigFromEnv).
func Setup(ctx context.Context, getenv func(string) string) (shutdown func(context.Context) error, err error) {
	c, err := ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	if c.Endpoint == "" { // nothing is made, nothing is turned off
		return func(context.Context) error { return nil }, nil
	}
	exp, err := newExporter(ctx, c)
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(append([]attribute.KeyValue{attribute.String("service.name", c.ServiceName)}, c.ResourceAttributes...)...)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(c.Sampler),
		sdktrace.WithResource(res),
	)
	install(tp)
	return func(ctx context.Context) error {
		install(nil)
		return tp.Shutdown(ctx)
	}, nil
}

func newExporter(ctx context.Context, c Config) (sdktrace.SpanExporter, error) {
	switch c.Protocol {
	case "grpc":
		return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(c.Endpoint), otlptracegrpc.WithHeaders(c.Headers))
	case "http/protobuf":
		return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(c.Endpoint), otlptracehttp.WithHeaders(c.Headers))
	}
	return nil, errors.New("tracing: no exporter for protocol " + c.Protocol)
}
