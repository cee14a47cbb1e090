package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/server"
)

// TestSchemaSDLIsTheSchema: GET /schema.graphql, introspection and the
// schema files describe one schema. The SDL is one document without
// `extend` (relay-compiler refuses type extensions), and every type,
// field, argument, input field, enum value, interface, union member and
// directive of it is what introspection answers and what the *.graphqls
// files declare.
func TestSchemaSDLIsTheSchema(t *testing.T) {
	hs := testutil.NewCountingServer(t, seedIncidents(t), server.Config{})
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/schema.graphql", nil)
	r := hs.Do(t, req)
	if r.Status != 200 {
		t.Fatalf("status %d", r.Status)
	}
	for _, line := range strings.Split(string(r.Raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "extend ") {
			t.Fatalf("the served SDL has an extension: %q", line)
		}
	}
	served, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: string(r.Raw)})
	if err != nil {
		t.Fatalf("the served SDL does not load: %v", err)
	}

	files, _ := filepath.Glob("../*.graphqls")
	if len(files) == 0 {
		t.Fatal("no schema files")
	}
	var srcs []*ast.Source
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, &ast.Source{Name: filepath.Base(f), Input: string(b)})
	}
	fromFiles, err := gqlparser.LoadSchema(srcs...)
	if err != nil {
		t.Fatalf("the schema files do not load: %v", err)
	}

	introspected := introspect(t, hs)
	want := describeSchema(fromFiles)
	for name, got := range map[string]map[string]string{"served SDL": describeSchema(served), "introspection": introspected} {
		if d := diffDescriptions(want, got); d != "" {
			t.Errorf("the %s differs from the schema files:\n%s", name, d)
		}
	}
	if !bytes.Contains(r.Raw, []byte("An incident by id, such as IL-0213.")) {
		t.Error("the served SDL lost the descriptions")
	}
}

// describeSchema flattens a schema's user-defined parts into lines keyed
// by a path, for comparison.
func describeSchema(s *ast.Schema) map[string]string {
	out := map[string]string{}
	for name, def := range s.Types {
		if def.BuiltIn || strings.HasPrefix(name, "__") {
			continue
		}
		out["type "+name] = string(def.Kind)
		for _, f := range def.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			out[name+"."+f.Name] = f.Type.String()
			for _, a := range f.Arguments {
				out[name+"."+f.Name+"("+a.Name+")"] = a.Type.String()
			}
		}
		for _, v := range def.EnumValues {
			out[name+"="+v.Name] = "value"
		}
		for _, i := range def.Interfaces {
			out[name+" implements "+i] = "yes"
		}
		for _, m := range def.Types {
			out[name+" | "+m] = "yes"
		}
	}
	for name, d := range s.Directives {
		if d.Position != nil && d.Position.Src != nil && d.Position.Src.BuiltIn {
			continue
		}
		out["directive @"+name] = "yes"
	}
	return out
}

func diffDescriptions(want, got map[string]string) string {
	var lines []string
	for k, v := range want {
		if got[k] != v {
			lines = append(lines, "  "+k+": want "+v+", got "+got[k])
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			lines = append(lines, "  "+k+": unexpected "+v)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

type introType struct {
	Kind   string     `json:"kind"`
	Name   string     `json:"name"`
	OfType *introType `json:"ofType"`
}

func (t *introType) String() string {
	switch t.Kind {
	case "NON_NULL":
		return t.OfType.String() + "!"
	case "LIST":
		return "[" + t.OfType.String() + "]"
	}
	return t.Name
}

// introspect describes the schema as introspection answers it, in
// describeSchema's lines, leaving out the built-in scalars and directives.
func introspect(t *testing.T, hs *testutil.CountingServer) map[string]string {
	t.Helper()
	const typeRef = `kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } }`
	r := hs.Post(t, `{ __schema {
		types { kind name
			fields(includeDeprecated: true) { name type { `+typeRef+` } args(includeDeprecated: true) { name type { `+typeRef+` } } }
			inputFields(includeDeprecated: true) { name type { `+typeRef+` } }
			enumValues(includeDeprecated: true) { name }
			interfaces { name }
			possibleTypes { name } }
		directives { name } } }`, nil)
	if len(r.Errors) > 0 {
		t.Fatalf("introspection: %s", r.Raw)
	}
	var data struct {
		Schema struct {
			Types []struct {
				Kind   string `json:"kind"`
				Name   string `json:"name"`
				Fields []struct {
					Name string     `json:"name"`
					Type *introType `json:"type"`
					Args []struct {
						Name string     `json:"name"`
						Type *introType `json:"type"`
					} `json:"args"`
				} `json:"fields"`
				InputFields []struct {
					Name string     `json:"name"`
					Type *introType `json:"type"`
				} `json:"inputFields"`
				EnumValues    []struct{ Name string } `json:"enumValues"`
				Interfaces    []struct{ Name string } `json:"interfaces"`
				PossibleTypes []struct{ Name string } `json:"possibleTypes"`
			} `json:"types"`
			Directives []struct{ Name string } `json:"directives"`
		} `json:"__schema"`
	}
	if err := json.Unmarshal(r.Data, &data); err != nil {
		t.Fatal(err)
	}
	builtinScalars := map[string]bool{"String": true, "Int": true, "Float": true, "Boolean": true, "ID": true}
	builtinDirectives := map[string]bool{"include": true, "skip": true, "deprecated": true, "specifiedBy": true, "defer": true, "oneOf": true}
	out := map[string]string{}
	for _, ty := range data.Schema.Types {
		if builtinScalars[ty.Name] || strings.HasPrefix(ty.Name, "__") {
			continue
		}
		out["type "+ty.Name] = ty.Kind
		for _, f := range ty.Fields {
			out[ty.Name+"."+f.Name] = f.Type.String()
			for _, a := range f.Args {
				out[ty.Name+"."+f.Name+"("+a.Name+")"] = a.Type.String()
			}
		}
		for _, f := range ty.InputFields {
			out[ty.Name+"."+f.Name] = f.Type.String()
		}
		for _, v := range ty.EnumValues {
			out[ty.Name+"="+v.Name] = "value"
		}
		for _, i := range ty.Interfaces {
			out[ty.Name+" implements "+i.Name] = "yes"
		}
		if ty.Kind == "UNION" {
			for _, m := range ty.PossibleTypes {
				out[ty.Name+" | "+m.Name] = "yes"
			}
		}
	}
	for _, d := range data.Schema.Directives {
		if !builtinDirectives[d.Name] {
			out["directive @"+d.Name] = "yes"
		}
	}
	return out
}
