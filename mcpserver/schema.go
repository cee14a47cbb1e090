package mcpserver

import (
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib/graph"
)

// Filter is a tool's filter argument: an IncidentFilter of the GraphQL
// schema as a JSON object, passed to GraphQL as the query's $filter
// variable untouched. Its JSON Schema is derived from the GraphQL
// schema's input type (filterDefs), so a field added to IncidentFilter
// reaches the tools with no change here; a key the schema does not know
// is passed on too, and GraphQL refuses it (INVALID) or, against a newer
// library, understands it.
type Filter map[string]any

// filterType is the GraphQL input type a Filter holds.
const filterType = "IncidentFilter"

// filterDefs returns the JSON Schemas of IncidentFilter and of every
// input type and enum it reaches, by GraphQL type name, for $defs: an
// input type refers to another (IncidentFilter to itself, for nested
// filters) by "#/$defs/Name".
func filterDefs() map[string]*jsonschema.Schema {
	s := graph.NewExecutableSchema(graph.Config{}).Schema()
	defs := map[string]*jsonschema.Schema{}
	inputDef(s, s.Types[filterType], defs)
	return defs
}

func inputDef(s *ast.Schema, d *ast.Definition, defs map[string]*jsonschema.Schema) {
	if d == nil || defs[d.Name] != nil {
		return
	}
	obj := &jsonschema.Schema{Type: "object", Description: oneLine(d.Description), Properties: map[string]*jsonschema.Schema{}}
	defs[d.Name] = obj
	for _, f := range d.Fields {
		p := typeSchema(s, f.Type, defs)
		if f.Description != "" {
			p.Description = oneLine(f.Description)
		}
		obj.Properties[f.Name] = p
		if f.Type.NonNull && f.DefaultValue == nil {
			obj.Required = append(obj.Required, f.Name)
		}
	}
}

// typeSchema is the JSON Schema of a GraphQL input type. A nullable
// field is one that may be left out: null is not offered, since a type
// that is a list of types (["string", "null"]) is less portable across
// the assistants' schema dialects (the MCP Inspector's --strict check).
func typeSchema(s *ast.Schema, t *ast.Type, defs map[string]*jsonschema.Schema) *jsonschema.Schema {
	var js *jsonschema.Schema
	if t.Elem != nil {
		js = &jsonschema.Schema{Type: "array", Items: typeSchema(s, t.Elem, defs)}
	} else {
		d := s.Types[t.NamedType]
		switch {
		case d == nil:
			js = &jsonschema.Schema{}
		case d.Kind == ast.Enum:
			js = &jsonschema.Schema{Type: "string"}
			for _, v := range d.EnumValues {
				js.Enum = append(js.Enum, v.Name)
			}
		case d.Kind == ast.InputObject:
			inputDef(s, d, defs)
			return &jsonschema.Schema{Ref: "#/$defs/" + d.Name}
		default:
			js = &jsonschema.Schema{Type: scalarType(d.Name)}
		}
	}
	return js
}

func scalarType(name string) string {
	switch name {
	case "Int":
		return "integer"
	case "Float":
		return "number"
	case "Boolean":
		return "boolean"
	case "String", "ID":
		return "string"
	}
	return "" // a custom scalar (JSON): anything
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// inputSchema is the input schema of a tool whose arguments are In: the
// SDK's inference from the struct, with every Filter field referring to
// IncidentFilter's schema under $defs.
func inputSchema[In any](defs map[string]*jsonschema.Schema) *jsonschema.Schema {
	js, err := jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[Filter](): {Ref: "#/$defs/" + filterType},
		reflect.TypeFor[Lang]():   langSchema,
	}})
	if err != nil {
		panic(err) // the tools' argument types are this package's: a test calls every one
	}
	for _, p := range js.Properties {
		if p.Ref != "" {
			js.Defs = defs
		}
	}
	return notNull(js)
}

// outputSchema is the output schema of a tool whose structured content is
// Out: the SDK's inference without null (notNull), since every list Out
// holds is sent empty rather than null and every optional field is
// omitted when empty.
func outputSchema[Out any]() *jsonschema.Schema {
	js, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(err) // the tools' result types are this package's: a test lists every tool
	}
	return notNull(js)
}

// notNull makes every type of js that is "T or null" T, all the way down.
func notNull(js *jsonschema.Schema) *jsonschema.Schema {
	if js == nil {
		return nil
	}
	if len(js.Types) == 2 && slices.Contains(js.Types, "null") {
		js.Type = js.Types[0]
		if js.Type == "null" {
			js.Type = js.Types[1]
		}
		js.Types = nil
	}
	for _, p := range js.Properties {
		notNull(p)
	}
	for _, d := range js.Defs {
		notNull(d)
	}
	notNull(js.Items)
	return js
}
