package restapi

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/filterexpr"
)

// The exports, for readers who do not write GraphQL (docs/exports.md):
//
//	GET /api/v1/incidents.csv?symptoms=high-latency,oom&dateFrom=2020-01-01
//	    Every incident the filter selects, in the order of incidents
//	    (DATE DESC, ties by id), as CSV (csv.go).
//	GET /feed.atom?domains=database
//	    The newest AtomEntries incidents by updated_at as an Atom 1.0
//	    feed (atom.go).
//	GET /api/v1/snapshot.jsonl.gz
//	    Every incident lists show by default, in id order, as the IL-JSON
//	    lines export writes, gzipped (snapshot.go). It takes no parameter.
//
// The query parameters of the first two are the fields of the GraphQL
// IncidentFilter, lists comma-separated, or the whole filter as one
// parameter, filter=, in its JSON form (GraphQL's variables, not and or
// included; the other form's parameters do not go with it); an unknown,
// repeated or malformed parameter is 400 with the REST error body. All go
// through the edge (Downloads):
// they count against the rate limit, carry an ETag made of the store
// sequence and the normalized parameters (a 304 reads nothing), and are
// cached when small enough. They read the store a page at a time, so
// memory stays the same whatever their size.

// Downloads is what the exports take of the server's edge
// (gqledge.Edge.ServeDownload): the rate limit, the response cache and
// HTTP caching around a body written as a stream. It returns write's error
// when nothing was written yet.
type Downloads interface {
	ServeDownload(w http.ResponseWriter, r *http.Request, key string, cost int, contentType string, write func(io.Writer) error) error
}

// ExportOptions configure MountExports.
type ExportOptions struct {
	// Incidents is the store's list API the exports read, a page at a
	// time.
	Incidents incidentlib.IncidentService
	// Downloads is the edge the exports are served through.
	Downloads Downloads
	// PublicURL is the library's address as readers reach it (such as
	// https://incidents.example.org), for the feed's links and entry ids;
	// empty: the request's scheme and host. Check it with
	// ValidatePublicURL.
	PublicURL string
	// Authenticate identifies a request's sender, as for Mount.
	Authenticate func(*http.Request) (*http.Request, error)
	Logger       *slog.Logger
}

// Costs of the exports against the rate limit: the CSV export costs the
// cost limit (one whole bucket of a client at the default burst), the
// feed as much as a page of AtomEntries incidents.
const (
	csvCost  = 0 // the cost limit
	atomCost = 10 * AtomEntries
)

// exportPage is how many incidents the exports read at a time.
const exportPage = incidentlib.MaxPageSize

type exports struct {
	api       *API
	incidents incidentlib.IncidentService
	downloads Downloads
	publicURL string
}

// MountExports adds the CSV export and the Atom feed to mux.
func MountExports(mux *http.ServeMux, o ExportOptions) error {
	if err := ValidatePublicURL(o.PublicURL); err != nil {
		return err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	x := &exports{api: &API{logger: o.Logger}, incidents: o.Incidents, downloads: o.Downloads, publicURL: strings.TrimSuffix(o.PublicURL, "/")}
	authed := func(h http.HandlerFunc) http.HandlerFunc {
		if o.Authenticate == nil {
			return h
		}
		return func(w http.ResponseWriter, r *http.Request) {
			ar, err := o.Authenticate(r)
			if err != nil {
				x.api.writeError(w, r, err)
				return
			}
			h(w, ar)
		}
	}
	for _, e := range exportRoutes {
		mux.HandleFunc("GET "+e.path, authed(func(w http.ResponseWriter, r *http.Request) { e.serve(x, w, r) }))
	}
	return nil
}

// exportRoutes are the exports MountExports serves: each is a list of
// incidents, under the one visibility rule (incidentlib.Listed) and the
// edge's Downloads.
var exportRoutes = []struct {
	path  string
	serve func(*exports, http.ResponseWriter, *http.Request)
}{
	{"/api/v1/incidents.csv", (*exports).csv},
	{"/feed.atom", (*exports).atom},
	{SnapshotPath, (*exports).snapshot},
}

// ExportPaths are the paths MountExports serves, for the tests that walk
// every export (withdrawn incidents left out, the rate limit, the ETag).
func ExportPaths() []string {
	out := make([]string, len(exportRoutes))
	for i, e := range exportRoutes {
		out[i] = e.path
	}
	return out
}

// ValidatePublicURL checks --public-url: empty, or an absolute http or
// https URL with a host and nothing after its path.
func ValidatePublicURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("the public URL %q is not a URL: %v", s, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("the public URL %q must start with http:// or https://", s)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("the public URL %q has no host", s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#"):
		return fmt.Errorf("the public URL %q must be a scheme, a host and an optional path, without user, query or fragment", s)
	}
	return nil
}

// filterParams are the query parameters of the exports: IncidentFilter's
// plain fields, as GraphQL names them (not and or are the JSON form's).
var filterParams = slices.DeleteFunc(slices.Clone(filterexpr.Fields), func(s string) bool { return s == "not" || s == "or" })

// parseFilter reads the filter of an export from q, allowing the extra
// parameters too (set in extra, which must hold their defaults). It
// returns the filter and its normalized form (lists sorted, each value
// once), which names the export in its ETag.
func parseFilter(q url.Values, extra map[string]string) (incidentlib.IncidentFilter, string, error) {
	var f incidentlib.IncidentFilter
	if _, ok := q[filterParam]; ok {
		return parseFilterJSON(q, extra)
	}
	for name, vs := range q {
		_, isExtra := extra[name]
		if !slices.Contains(filterParams, name) && !isExtra {
			return f, "", invalid(name, "unknown parameter %q: the parameters are the fields of IncidentFilter (%s), or filter= with the whole filter as JSON", name, strings.Join(filterParams, ", "))
		}
		if len(vs) != 1 {
			return f, "", invalid(name, "%s is given %d times; give it once, with a comma-separated list", name, len(vs))
		}
		if isExtra {
			extra[name] = vs[0]
			continue
		}
		if err := setFilterParam(&f, name, vs[0]); err != nil {
			return f, "", err
		}
	}
	return f, normalized(f, extra), nil
}

// filterParam is the parameter of the JSON form of the filter.
const filterParam = "filter"

// parseFilterJSON is parseFilter for the form filter=JSON: the filter as
// GraphQL's variables give it (filterexpr.Decode), checked at once at
// every depth (filterexpr.Validate, as the store checks it), beside the
// extra parameters only.
func parseFilterJSON(q url.Values, extra map[string]string) (incidentlib.IncidentFilter, string, error) {
	var f incidentlib.IncidentFilter
	for name, vs := range q {
		_, isExtra := extra[name]
		switch {
		case name != filterParam && !isExtra:
			return f, "", invalid(name, "%s does not go with filter=: put it in the filter's JSON", name)
		case len(vs) != 1:
			return f, "", invalid(name, "%s is given %d times; give it once", name, len(vs))
		case isExtra:
			extra[name] = vs[0]
		}
	}
	f, err := filterexpr.Decode([]byte(q.Get(filterParam)))
	if err == nil {
		err = filterexpr.Validate(&f)
	}
	if err != nil {
		return f, "", err
	}
	return f, normalized(f, extra), nil
}

// normalized is the form of a filter and the extra parameters that names
// an export in its ETag.
func normalized(f incidentlib.IncidentFilter, extra map[string]string) string {
	b, _ := json.Marshal(f)
	norm := string(b)
	if len(extra) > 0 {
		e, _ := json.Marshal(extra) // keys sorted
		norm += string(e)
	}
	return norm
}

// setFilterParam sets the field name of f from its value v.
func setFilterParam(f *incidentlib.IncidentFilter, name, v string) error {
	list := func() ([]string, error) {
		parts := strings.Split(v, ",")
		for _, p := range parts {
			if p == "" {
				return nil, invalid(name, "%s is a comma-separated list without empty items, got %q", name, v)
			}
		}
		slices.Sort(parts)
		return slices.Compact(parts), nil
	}
	boolean := func() (*bool, error) {
		switch v {
		case "true", "false":
			b := v == "true"
			return &b, nil
		}
		return nil, invalid(name, "%s must be true or false, got %q", name, v)
	}
	var err error
	switch name {
	case "ids":
		if f.IDs, err = list(); err == nil {
			for _, id := range f.IDs {
				if _, ok := incidentlib.ParseID(id); !ok {
					return invalid(name, "%q is not an incident id such as IL-0213", id)
				}
			}
		}
	case "organizations":
		f.Organizations, err = list()
	case "domains":
		f.Domains, err = list()
	case "symptoms":
		f.Symptoms, err = list()
	case "components":
		f.Components, err = list()
	case "rootCauses":
		f.RootCauses, err = list()
	case "contributing":
		f.Contributing, err = list()
	case "severities":
		f.Severities, err = list()
	case "dateFrom", "dateTo":
		if _, perr := time.Parse(time.DateOnly, v); perr != nil {
			return invalid(name, "%s must be a date as YYYY-MM-DD, got %q", name, v)
		}
		if name == "dateFrom" {
			f.DateFrom = &v
		} else {
			f.DateTo = &v
		}
	case "updatedSince":
		if _, perr := time.Parse(time.RFC3339, v); perr != nil {
			return invalid(name, "updatedSince must be an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", v)
		}
		f.UpdatedSince = &v
	case "reviewed":
		f.Reviewed, err = boolean()
	case "reviewStates": // WITHDRAWN brings withdrawn incidents into the export
		f.ReviewStates, err = appendEnums(f.ReviewStates, list, name, "a review state: DRAFT, IN_REVIEW, REVIEWED, DISPUTED or WITHDRAWN")
	case "isRecurrence":
		f.IsRecurrence, err = boolean()
	case "hasRecurrences":
		f.HasRecurrences, err = boolean()
	case "verification":
		f.Verification, err = appendEnums(f.Verification, list, name, "a verification: PRIMARY_SOURCE, SECONDARY_REPORT, FIRST_PERSON_ACCOUNT or UNKNOWN")
	}
	return err
}

// appendEnums appends to dst a parameter's comma list (list) as values of
// an enum, each checked by its IsValid; a value that is none is refused
// as not being what (INVALID, naming the parameter).
func appendEnums[T interface {
	~string
	IsValid() bool
}](dst []T, list func() ([]string, error), name, what string) ([]T, error) {
	ss, err := list()
	if err != nil {
		return dst, err
	}
	for _, s := range ss {
		v := T(s)
		if !v.IsValid() {
			return dst, invalid(name, "%q is not %s", s, what)
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// eachIncident calls fn for every incident f selects, in order, reading a
// page at a time; first is called with the first page's incidents before
// any other (an error there is the filter's, before anything is written).
func (x *exports) eachIncident(r *http.Request, f incidentlib.IncidentFilter, order incidentlib.IncidentOrder, limit int,
	fn func(*incidentlib.Incident) error) error {
	ctx := r.Context()
	var after *string
	n := 0
	for {
		size := exportPage
		if limit > 0 {
			size = min(size, limit-n)
		}
		page, err := x.incidents.FindIncidents(ctx, f, order, incidentlib.PageArgs{First: &size, After: after})
		if err != nil {
			return err
		}
		incs, err := x.incidents.FindIncidentsByIDs(ctx, page.IDs)
		if err != nil {
			return err
		}
		for _, inc := range incs {
			if inc == nil { // deleted between the two reads
				continue
			}
			if err := fn(inc); err != nil {
				return err
			}
			n++
		}
		if !page.HasNextPage || len(page.Cursors) == 0 || (limit > 0 && n >= limit) {
			return nil
		}
		after = &page.Cursors[len(page.Cursors)-1]
	}
}

// base is the address links are made absolute with (BaseURL).
func (x *exports) base(r *http.Request) string { return BaseURL(x.publicURL, r) }

// BaseURL is the library's address for a request, the one rule of every
// absolute link the server writes (the feed's, citations'): publicURL
// (--public-url, without its trailing slash) when set, else the request's
// own scheme (https when it came over TLS; no forwarded header is
// trusted) and Host.
func BaseURL(publicURL string, r *http.Request) string {
	if publicURL != "" {
		return strings.TrimSuffix(publicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// IncidentURL is the address of an incident under base (BaseURL): its
// IL-JSON, GET /api/v1/incidents/{id}.
func IncidentURL(base, id string) string {
	return base + "/api/v1/incidents/" + url.PathEscape(id)
}
