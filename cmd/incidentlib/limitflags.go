package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/server"
	"github.com/incidentlib/incidentlib/server/gqledge"
)

// limitFlags are serve's flags against hostile and careless clients: the
// limits of one request, the per-client rate of cost, CORS, introspection
// in prod mode and the Go memory limit (server/gqledge: limits.go, ratelimit.go,
// cors.go, prod.go; server/gc.go).
type limitFlags struct {
	maxCost, maxDepth, maxAliases, maxTokens, maxBatch *int
	maxBody, maxRecord                                 *byteSize
	requestTimeout                                     *time.Duration
	rateLimit, rateBurst                               *int
	proxyHeader, corsOrigins                           *string
	introspection                                      *bool
	memoryLimit                                        *byteSize
}

func addLimitFlags(f *flags) *limitFlags {
	l := &limitFlags{
		maxCost: f.count("max-cost", gqledge.DefaultMaxCost, 100,
			"largest cost of one request (a batch shares it), in cost units: 1 per field, a list or page its size times its items (reported in extensions.cost)"),
		maxDepth:   f.count("max-depth", gqledge.DefaultMaxDepth, 3, "deepest nesting of fields in a document, in fields, fragments expanded"),
		maxAliases: f.count("max-aliases", gqledge.DefaultMaxAliases, 1, "aliased fields in a document, in fields, fragments expanded"),
		maxTokens:  f.count("max-tokens", gqledge.DefaultMaxTokens, 100, "tokens the parser reads of one document, in tokens"),
		maxBatch:   f.count("max-batch", gqledge.DefaultMaxBatch, 1, "operations in one POST sent as a JSON array, in operations; 1 turns batching off"),
		maxBody:    f.bytes("max-body", gqledge.DefaultMaxBody, false, "largest request body, in bytes; larger answers 413"),
		maxRecord: f.bytes("max-record", incidentlib.DefaultMaxRecordBytes, false,
			"largest record, in bytes of its IL-JSON, on every path a record enters by: upsertIncident and importIncidents, the change feed a --follow replica reads (a longer record is skipped), --upstream answers (left out); below --max-body"),
		requestTimeout: f.duration("request-timeout", gqledge.DefaultRequestTimeout, false,
			"deadline of each GraphQL request, passed to resolvers, loaders and the store; past it, TIMEOUT with the data so far"),
		rateLimit: f.count("rate-limit", 0, 0,
			"cost each client may spend per second, in cost units per second (a client is its bearer token, else its IP address); 0, the default, is off"),
		rateBurst: f.count("rate-burst", 0, 0,
			"cost a client may spend at once after a quiet spell, in cost units; 0 means --max-cost, and less than --max-cost is refused"),
		proxyHeader: f.str("trusted-proxy-header", "",
			"header a trusted reverse proxy sets to the client's address, such as X-Forwarded-For (its last entry is used) or X-Real-IP; empty: the connection's address"),
		corsOrigins: f.str("cors-origins", "",
			"comma-separated origins browsers may call the API from, such as https://example.org; * allows any; empty (the default): none"),
		introspection: f.boolean("introspection", false,
			"keep GraphQL introspection on in --prod mode (the schema is published at /schema.graphql either way)"),
		memoryLimit: f.bytes("memory-limit", 0, true,
			fmt.Sprintf("Go soft memory limit (debug.SetMemoryLimit), in bytes; 0, the default, leaves it unlimited (or GOMEMLIMIT); at least %dMiB, since a limit below what the collector needs gets the process killed anyway (seed 001)", server.MinMemoryLimit>>20)),
	}
	f.checks = append(f.checks, func() error {
		if *l.rateBurst != 0 && *l.rateBurst < *l.maxCost {
			return fmt.Errorf("--rate-burst (%d) must be at least --max-cost (%d): a request at the cost limit could never pass", *l.rateBurst, *l.maxCost)
		}
		if m := int64(*l.memoryLimit); m != 0 && m < server.MinMemoryLimit {
			return fmt.Errorf("--memory-limit must be 0 (none) or at least %dMiB, got %s: below what the garbage collector needs, the process is OOM-killed anyway (seed 001)", server.MinMemoryLimit>>20, l.memoryLimit)
		}
		if *l.maxBody < 1<<10 {
			return fmt.Errorf("--max-body must be at least 1KiB, got %s", l.maxBody)
		}
		if *l.maxRecord < 1<<10 {
			return fmt.Errorf("--max-record must be at least 1KiB, got %s", l.maxRecord)
		}
		if *l.maxRecord >= *l.maxBody {
			return fmt.Errorf("--max-record (%s) must be below --max-body (%s): a GraphQL request must be able to carry a record", l.maxRecord, l.maxBody)
		}
		if h := strings.TrimSpace(*l.proxyHeader); h != "" {
			if err := gqledge.ValidateHeaderName(h); err != nil {
				return fmt.Errorf("--trusted-proxy-header: %v", err)
			}
		}
		if err := gqledge.ValidateCORSOrigins(l.origins()); err != nil {
			return fmt.Errorf("--cors-origins: %v", err)
		}
		return nil
	})
	return l
}

// config sets the limits' fields of cfg.
func (l *limitFlags) config(cfg server.Config) server.Config {
	cfg.Limits = gqledge.Limits{
		MaxCost: *l.maxCost, MaxDepth: *l.maxDepth, MaxAliases: *l.maxAliases, MaxTokens: *l.maxTokens,
		MaxBody: int64(*l.maxBody), MaxBatch: *l.maxBatch, RequestTimeout: *l.requestTimeout,
	}
	cfg.RateLimit = gqledge.RateLimit{
		CostPerSecond: float64(*l.rateLimit), Burst: *l.rateBurst, TrustedProxyHeader: strings.TrimSpace(*l.proxyHeader),
	}
	cfg.CORSOrigins = l.origins()
	cfg.Introspection = *l.introspection
	return cfg
}

func (l *limitFlags) origins() []string {
	var out []string
	for _, o := range strings.Split(*l.corsOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

// applyMemoryLimit sets the Go memory limit when one was given.
func (l *limitFlags) applyMemoryLimit() error {
	if *l.memoryLimit == 0 {
		return nil
	}
	_, err := server.SetMemoryLimit(int64(*l.memoryLimit))
	return err
}
