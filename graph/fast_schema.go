package graph

import (
	"fmt"
	"slices"
	"sort"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib/graph/model"
)

// What FastReads knows of the schema is derived from it once, when it is
// made (NewFastReads): which types each object type satisfies (for
// fragment type conditions), which fields take only a lang argument, and
// which object types a query can reach. The one hand-kept table is
// FastReadsHandsOn, the fields it leaves to gqlgen's executor; every other
// field of a type a query reaches is written by the writers of
// fast_query.go, fast_incidents.go and fast_objects.go, and
// TestFastReadsCoversSchema (server) fails for a field that is neither.

// FastReadsHandsOn names, per object type, the fields FastReads hands to
// gqlgen's executor: a query that selects one of them is answered by
// gqlgen, whole. Introspection (__schema, __type) is handed on too.
var FastReadsHandsOn = map[string][]string{
	"Query":                    {"organizations", "tokens", "taxonomyHistory", "incidentVersion", "deletedIncident", "glossary", "__schema", "__type"},
	"Incident":                 {"similar", "history", "withdrawnReason", "citation"},
	"IncidentSearchConnection": {"facets", "years", "suggestions"},
	"Organization":             {"incidents"},
	"TaxonomyTerm":             {"incidents", "deprecated", "aliases"},
}

// fastSchema is what FastReads derived from the schema.
type fastSchema struct {
	// satisfies lists, per object type, the type and its interfaces.
	satisfies map[string][]string
	// fields holds, per object type and field, how FastReads treats it.
	fields map[string]map[string]fastField
}

// fastField is how FastReads treats a field.
type fastField uint8

const (
	fieldWritten  fastField = iota // written by FastReads
	fieldLang                      // written, its only argument lang parsed once per plan
	fieldHandedOn                  // in FastReadsHandsOn
)

// deriveFastSchema reads the tables from the schema. It fails if
// FastReadsHandsOn names a field the schema does not have.
func deriveFastSchema(s *ast.Schema) (*fastSchema, error) {
	fs := &fastSchema{satisfies: map[string][]string{}, fields: map[string]map[string]fastField{}}
	for name, def := range s.Types {
		if def.Kind != ast.Object {
			continue
		}
		fs.satisfies[name] = append([]string{name}, def.Interfaces...)
		fields := make(map[string]fastField, len(def.Fields))
		for _, f := range def.Fields {
			switch {
			case slices.Contains(FastReadsHandsOn[name], f.Name):
				fields[f.Name] = fieldHandedOn
			case isLangOnly(f):
				fields[f.Name] = fieldLang
			default:
				fields[f.Name] = fieldWritten
			}
		}
		fs.fields[name] = fields
	}
	for typ, names := range FastReadsHandsOn {
		for _, n := range names {
			if _, ok := fs.fields[typ][n]; !ok {
				return nil, fmt.Errorf("fast reads: FastReadsHandsOn names %s.%s, which the schema does not have", typ, n)
			}
		}
	}
	return fs, nil
}

// isLangOnly tells whether the field's only argument is lang: Lang.
func isLangOnly(f *ast.FieldDefinition) bool {
	return len(f.Arguments) == 1 && f.Arguments[0].Name == "lang" &&
		f.Arguments[0].Type.NamedType == "Lang" && !f.Arguments[0].Type.NonNull
}

// parseLang parses a lang argument as gqlgen's generated code does.
func parseLang(raw map[string]any) (*model.Lang, error) {
	v, ok := raw["lang"]
	if !ok || v == nil {
		return nil, nil
	}
	l := new(model.Lang)
	if err := l.UnmarshalGQL(v); err != nil {
		return nil, err
	}
	return l, nil
}

// FastReadsReach lists, sorted, every field "Type.field" of the object
// types a query can reach through fields FastReads writes, from Query, and
// whether FastReads hands it on: the fields FastReads must either write or
// name in FastReadsHandsOn. s is the executable schema's.
func FastReadsReach(s *ast.Schema) (fields []string, handedOn map[string]bool) {
	handedOn = map[string]bool{}
	seen := map[string]bool{}
	var visit func(typ string)
	visit = func(typ string) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		def := s.Types[typ]
		if def == nil {
			return
		}
		if def.Kind == ast.Interface || def.Kind == ast.Union {
			for _, impl := range s.GetPossibleTypes(def) {
				visit(impl.Name)
			}
			return
		}
		if def.Kind != ast.Object {
			return
		}
		for _, f := range def.Fields {
			if f.Name == "__typename" {
				continue
			}
			name := typ + "." + f.Name
			fields = append(fields, name)
			if slices.Contains(FastReadsHandsOn[typ], f.Name) {
				handedOn[name] = true
				continue
			}
			visit(f.Type.Name())
		}
	}
	visit(s.Query.Name)
	sort.Strings(fields)
	return fields, handedOn
}
