package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib/graph"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
)

// An enum value the schema does not have is refused as the client's
// error, never INTERNAL: written in the document, GraphQL validation
// refuses it; in a variable, validation lets a value through that differs
// from one of the schema's only in case (gqlparser compares enum names
// case-insensitively there), and the enum's UnmarshalGQL, which every
// enum's goes through (incidentlib.UnmarshalEnum), refuses it as INVALID
// with its path, on FastReads' path (lang) as on gqlgen's. EveryInputEnum
// does so for every argument of the schema that takes an enum.
func TestEnumValuesNotInTheSchemaAreInvalid(t *testing.T) {
	ts := newTestServer(t, seedIncidents(t))
	const langQ = `query($l: Lang) { incidents(first: 2) { nodes { title(lang: $l) } } }`
	var first struct {
		Incidents struct{ Nodes []struct{ ID string } }
	}
	ts.data(t, `{ incidents(first: 1) { nodes { id } } }`, nil, &first)
	langOneQ := `query($l: Lang) { incident(id: "` + first.Incidents.Nodes[0].ID + `") { title(lang: $l) } }`
	const incidentsQ = `query($o: IncidentOrder) { incidents(first: 100, orderBy: $o) { nodes { id } } }`
	const orgsQ = `query($o: OrganizationOrder) { organizations(first: 5, orderBy: $o) { nodes { slug } } }`
	for _, c := range []struct {
		name, query string
		order       map[string]any
		want        string
	}{
		{"IncidentField", incidentsQ, map[string]any{"field": "BOGUS", "direction": "ASC"}, "BOGUS is not a valid IncidentOrderField"},
		{"IncidentFieldCase", incidentsQ, map[string]any{"field": "date", "direction": "ASC"}, "date is not a valid IncidentOrderField"},
		{"IncidentDirection", incidentsQ, map[string]any{"field": "DATE", "direction": "SIDEWAYS"}, "SIDEWAYS is not a valid OrderDirection"},
		{"IncidentFieldNotString", incidentsQ, map[string]any{"field": 7, "direction": "ASC"}, "IncidentOrderField"},
		{"IncidentDirectionCase", incidentsQ, map[string]any{"field": "DATE", "direction": "asc"}, "asc is not a valid OrderDirection"},
		{"OrganizationDirection", orgsQ, map[string]any{"field": "NAME", "direction": "UP"}, "UP is not a valid OrderDirection"},
		{"OrganizationDirectionCase", orgsQ, map[string]any{"field": "NAME", "direction": "desc"}, "desc is not a valid OrderDirection"},
	} {
		t.Run("Variable"+c.name, func(t *testing.T) {
			r := ts.query(t, c.query, map[string]any{"o": c.order})
			if len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, c.want) || string(r.Data) != "" && string(r.Data) != "null" {
				t.Fatalf("errors %+v data %s, want a refusal saying %q and no data", r.Errors, r.Data, c.want)
			}
			if code := r.code(); code == "INTERNAL" || code == "" {
				t.Fatalf("code %q for a client's value: %+v", code, r.Errors)
			}
		})
	}
	for name, q := range map[string]string{"LangFastReads": langQ, "LangResolver": langOneQ} {
		t.Run(name, func(t *testing.T) {
			r := ts.query(t, q, map[string]any{"l": "en"})
			if len(r.Errors) == 0 || r.code() != "INVALID" || !strings.Contains(r.Errors[0].Message, "en is not a valid Lang") {
				t.Fatalf("lang en: errors %+v, want INVALID, en is not a valid Lang", r.Errors)
			}
			if r := ts.query(t, q, map[string]any{"l": "EN"}); len(r.Errors) != 0 {
				t.Fatalf("lang EN: %+v", r.Errors)
			}
		})
	}
	for name, doc := range map[string]string{
		"LiteralField":     `{ incidents(orderBy: {field: BOGUS, direction: ASC}) { nodes { id } } }`,
		"LiteralDirection": `{ incidents(orderBy: {field: ID, direction: UP}) { nodes { id } } }`,
	} {
		t.Run(name, func(t *testing.T) {
			if r := ts.query(t, doc, nil); len(r.Errors) == 0 || r.code() != "GRAPHQL_VALIDATION_FAILED" {
				t.Fatalf("errors %+v, want GRAPHQL_VALIDATION_FAILED", r.Errors)
			}
		})
	}
	t.Run("EveryInputEnum", func(t *testing.T) { testEveryInputEnum(t) })
	t.Run("EveryValueOrders", func(t *testing.T) {
		ids := func(field, dir string) []string {
			var out struct {
				Incidents struct{ Nodes []struct{ ID string } }
			}
			ts.data(t, incidentsQ, map[string]any{"o": map[string]any{"field": field, "direction": dir}}, &out)
			s := make([]string, len(out.Incidents.Nodes))
			for i, n := range out.Incidents.Nodes {
				s[i] = n.ID
			}
			return s
		}
		asc, desc := ids("ID", "ASC"), ids("ID", "DESC")
		if len(asc) < 2 || !slices.IsSorted(asc) {
			t.Fatalf("ID ASC: %v", asc)
		}
		slices.Reverse(desc)
		if !slices.Equal(asc, desc) {
			t.Fatalf("ID DESC is not ID ASC reversed: %v", desc)
		}
		for _, field := range []string{"DATE", "UPDATED_AT"} {
			if got := ids(field, "ASC"); len(got) != len(asc) {
				t.Fatalf("%s ASC: %d incidents, want %d", field, len(got), len(asc))
			}
		}
	})
}

// testEveryInputEnum sends, for every argument that takes an enum
// (inputEnumCases), the enum's first value in lower case: GraphQL
// validation lets it through and the enum's reader must refuse it as
// INVALID, naming the value and the enum, at the argument's path. Each
// query goes to both handlers (FastReads and gqlgen's executor), which
// must give the same answer. The schema's own values pass: every value
// of each enum at its first argument, the first value at the others.
func testEveryInputEnum(t *testing.T) {
	s := graph.NewExecutableSchema(graph.Config{}).Schema()
	cases, inputEnums := inputEnumCases(t, s)
	p := newFastPair(t, seedIncidents(t))
	// Mutations go to a third handler over the store, with an admin
	// token: a request without one is refused before its arguments are
	// read.
	const admin = "enum-walk-admin-token"
	writes, _ := testutil.ServerTest(t, p.db.DB, server.Config{AdminToken: admin}, testutil.ServerParts{})
	send := func(c enumCase, v string) testutil.GQLResult {
		vars := maps.Clone(c.required)
		vars["v"] = c.value(v)
		var r testutil.GQLResult
		if c.mutation {
			body, _ := json.Marshal(map[string]any{"query": c.doc, "variables": vars})
			req, _ := http.NewRequest(http.MethodPost, writes.URL+"/graphql", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+admin)
			_, b := testutil.RoundTrip(t, req)
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("%s: %v: %s", c.at, err, b)
			}
			return r
		}
		// FastReads and gqlgen's executor: the same status, data and
		// extensions, and the same errors (gqlgen's come in the order
		// its goroutines end).
		var answers [2]struct {
			testutil.GQLResult
			Extensions json.RawMessage `json:"extensions"`
			status     string
			errors     []string
		}
		for i, url := range []string{p.fast.URL, p.generic.URL} {
			status, body, _ := bytes.Cut(postRaw(t, url, c.doc, vars, ""), []byte(" "))
			a := &answers[i]
			if err := json.Unmarshal(body, a); err != nil {
				t.Fatalf("%s: %v: %s", c.at, err, body)
			}
			a.status = string(status)
			for _, e := range a.Errors {
				b, _ := json.Marshal(e)
				a.errors = append(a.errors, string(b))
			}
			slices.Sort(a.errors)
		}
		f, g := answers[0], answers[1]
		if f.status != g.status || !bytes.Equal(f.Data, g.Data) || !bytes.Equal(f.Extensions, g.Extensions) || !slices.Equal(f.errors, g.errors) {
			t.Errorf("%s: FastReads and gqlgen differ for %s, variables %v:\nfast:    %s %s %s %v\ngeneric: %s %s %s %v",
				c.at, c.doc, vars, f.status, f.Data, f.Extensions, f.errors, g.status, g.Data, g.Extensions, g.errors)
		}
		return f.GQLResult
	}
	tried := map[string]bool{}
	for _, c := range cases {
		values := s.Types[c.enum].EnumValues
		wrong := strings.ToLower(values[0].Name)
		r := send(c, wrong)
		want := wrong + " is not a valid " + c.enum
		if len(r.Errors) == 0 {
			t.Errorf("%s: %s %q answered %s without an error\n%s", c.at, c.enum, wrong, r.Data, c.doc)
		}
		for _, e := range r.Errors {
			if code := e.Extensions["code"]; code != "INVALID" || e.Message != want || !endsWith(e.Path, c.path) {
				t.Errorf("%s: %s %q: code %v, message %q, path %v; want INVALID, %q at ...%v\n%s", c.at, c.enum, wrong, code, e.Message, e.Path, want, c.path, c.doc)
			}
		}
		if !tried[c.enum] {
			tried[c.enum] = true
		} else {
			values = values[:1]
		}
		for _, v := range values {
			for _, e := range send(c, v.Name).Errors {
				if endsWith(e.Path, c.path) || strings.Contains(e.Message, "not a valid") {
					t.Errorf("%s: the schema's value %s refused: %+v", c.at, v.Name, e)
				}
			}
		}
	}
	for e := range inputEnums {
		if !tried[e] {
			t.Errorf("enum %s is taken in an input position, but no request sent it", e)
		}
	}
	if len(inputEnums) < 13 {
		t.Errorf("the walk found %d enums in input positions: %v", len(inputEnums), inputEnums)
	}
	if n := executorCount(t, p.fast, "fast"); n == 0 {
		t.Errorf("FastReads answered none of the queries: the test compares gqlgen with itself")
	}
	t.Logf("%d arguments, %d enums", len(cases), len(inputEnums))
}

// endsWith tells whether a GraphQL error's path ends with suffix.
func endsWith(path, suffix []any) bool {
	if len(path) < len(suffix) {
		return false
	}
	for i, x := range suffix {
		if fmt.Sprint(path[len(path)-len(suffix)+i]) != fmt.Sprint(x) {
			return false
		}
	}
	return true
}

// enumCase is a request that sends an enum through one argument: the
// variable $v is the argument's value, whose route (input fields and list
// elements, at any depth) ends at the enum.
type enumCase struct {
	enum, at string // the enum; where it is taken, as Type.field(arg).route
	doc      string
	mutation bool
	// value builds $v with the enum's value s at the end of the route,
	// and required is the other required arguments' variables.
	value    func(s string) any
	required map[string]any
	path     []any // the field, the argument and its route: the end of the error's path
}

// inputEnumCases walks the schema for every argument of a field that
// takes an enum (Subscription's aside: no subscription over POST), directly
// or in an input object at any depth, list or not, and builds a request for
// each. A field below the root is reached by the shortest selection from
// Query through fields without required arguments. inputEnums is every
// enum in an input position, Subscription's included.
func inputEnumCases(t *testing.T, s *ast.Schema) (cases []enumCase, inputEnums map[string]bool) {
	t.Helper()
	inputEnums = map[string]bool{}
	// reach: the selection that leads from the operation to each type,
	// through fields without required arguments first, then through
	// fields whose required arguments sampleLiteral fills.
	reach := map[string][]string{s.Query.Name: nil, s.Mutation.Name: nil}
	for _, withRequired := range []bool{false, true} {
		queue := slices.Collect(maps.Keys(reach))
		slices.Sort(queue)
		for ; len(queue) > 0; queue = queue[1:] {
			def := s.Types[queue[0]]
			if def.Name == s.Mutation.Name {
				continue
			}
			for _, f := range def.Fields {
				next := f.Type.Name()
				if _, seen := reach[next]; seen || strings.HasPrefix(f.Name, "__") || s.Types[next].Kind != ast.Object {
					continue
				}
				var args []string
				for _, a := range f.Arguments {
					switch {
					case a.Type.NonNull && a.DefaultValue == nil && withRequired:
						args = append(args, a.Name+": "+sampleLiteral(s, a.Type))
					case a.Type.NonNull && a.DefaultValue == nil:
						args = append(args, "")
					}
				}
				if slices.Contains(args, "") {
					continue
				}
				sel := f.Name
				if len(args) > 0 {
					sel += "(" + strings.Join(args, ", ") + ")"
				}
				reach[next] = append(slices.Clip(reach[def.Name]), sel)
				queue = append(queue, next)
			}
		}
	}
	// routes lists the ways from a value of type typ to an enum: the
	// path of input fields and list indexes, and the enum.
	type route struct {
		path []any
		enum string
	}
	var routes func(typ *ast.Type, stack []string) []route
	routes = func(typ *ast.Type, stack []string) []route {
		if typ.Elem != nil {
			var out []route
			for _, r := range routes(typ.Elem, stack) {
				out = append(out, route{append([]any{0}, r.path...), r.enum})
			}
			return out
		}
		def := s.Types[typ.NamedType]
		switch {
		case def.Kind == ast.Enum:
			return []route{{nil, def.Name}}
		case def.Kind != ast.InputObject || slices.Contains(stack, def.Name):
			return nil
		}
		var out []route
		for _, f := range def.Fields {
			for _, r := range routes(f.Type, append(slices.Clip(stack), def.Name)) {
				out = append(out, route{append([]any{f.Name}, r.path...), r.enum})
			}
		}
		return out
	}
	names := slices.Sorted(maps.Keys(s.Types))
	for _, name := range names {
		def := s.Types[name]
		if def.Kind != ast.Object || strings.HasPrefix(name, "__") {
			continue
		}
		for _, f := range def.Fields {
			for _, a := range f.Arguments {
				for _, r := range routes(a.Type, nil) {
					inputEnums[r.enum] = true
					prefix, ok := reach[name]
					if name == s.Subscription.Name || !ok {
						if name != s.Subscription.Name {
							t.Errorf("%s.%s(%s): no selection from Query reaches %s", name, f.Name, a.Name, name)
						}
						continue
					}
					cases = append(cases, enumCaseOf(s, def, f, a, prefix, r.path, r.enum))
				}
			}
		}
	}
	return cases, inputEnums
}

// enumCaseOf is the request for the enum at the end of path in argument a
// of field f of def, reached through the selection prefix.
func enumCaseOf(s *ast.Schema, def *ast.Definition, f *ast.FieldDefinition, a *ast.ArgumentDefinition, prefix []string, path []any, enum string) enumCase {
	c := enumCase{enum: enum, at: fmt.Sprintf("%s.%s(%s)%v", def.Name, f.Name, a.Name, path), required: map[string]any{}, path: append([]any{f.Name, a.Name}, path...)}
	decls, args := []string{"$v: " + a.Type.String()}, []string{a.Name + ": $v"}
	for _, o := range f.Arguments {
		if o != a && o.Type.NonNull && o.DefaultValue == nil {
			decls, args = append(decls, "$"+o.Name+": "+o.Type.String()), append(args, o.Name+": $"+o.Name)
			c.required[o.Name] = sampleVariable(s, o.Type)
		}
	}
	sel := f.Name + "(" + strings.Join(args, ", ") + ")"
	if k := s.Types[f.Type.Name()].Kind; k == ast.Object || k == ast.Interface || k == ast.Union {
		sel += " { __typename }"
	}
	for i := len(prefix) - 1; i >= 0; i-- {
		sel = prefix[i] + " { " + sel + " }"
	}
	op := "query"
	if c.mutation = def.Name == s.Mutation.Name; c.mutation {
		op = "mutation"
	}
	c.doc = op + "(" + strings.Join(decls, ", ") + ") { " + sel + " }"
	c.value = func(v string) any {
		var build func(typ *ast.Type, path []any) any
		build = func(typ *ast.Type, path []any) any {
			if len(path) == 0 {
				return v
			}
			if _, ok := path[0].(int); ok {
				return []any{build(typ.Elem, path[1:])}
			}
			m := sampleVariable(s, ast.NonNullNamedType(typ.NamedType, nil)).(map[string]any)
			fd := s.Types[typ.NamedType].Fields.ForName(path[0].(string))
			m[fd.Name] = build(fd.Type, path[1:])
			return m
		}
		return build(a.Type, path)
	}
	return c
}

// sampleLiteral is a literal of a scalar or enum type typ.
func sampleLiteral(s *ast.Schema, typ *ast.Type) string {
	if def := s.Types[typ.Name()]; def.Kind == ast.Enum {
		return def.EnumValues[0].Name
	}
	b, _ := json.Marshal(sampleVariable(s, typ))
	return string(b)
}

// sampleVariable is a variable of type typ that passes GraphQL validation: an input
// object has its required fields, a list one element, an enum its first
// value.
func sampleVariable(s *ast.Schema, typ *ast.Type) any {
	if typ.Elem != nil {
		return []any{sampleVariable(s, typ.Elem)}
	}
	def := s.Types[typ.NamedType]
	switch def.Kind {
	case ast.Enum:
		return def.EnumValues[0].Name
	case ast.InputObject:
		m := map[string]any{}
		for _, f := range def.Fields {
			if f.Type.NonNull && f.DefaultValue == nil {
				m[f.Name] = sampleVariable(s, f.Type)
			}
		}
		return m
	}
	switch def.Name {
	case "Int", "Float":
		return 1
	case "Boolean":
		return false
	case "JSON":
		return map[string]any{}
	}
	return "incident"
}
