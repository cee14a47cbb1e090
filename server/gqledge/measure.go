package gqledge

import (
	"fmt"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/lexer"
)

// The shape of a document, measured before gqlgen validates it: its
// tokens, depth, aliases and repeated fields, fragments expanded.

// countTokens counts the document's tokens, up to limit+1.
func countTokens(q string, limit int) int {
	lx := lexer.New(&ast.Source{Input: q})
	n := 0
	for n <= limit {
		tok, err := lx.ReadToken()
		if err != nil || tok.Kind == lexer.EOF {
			break
		}
		n++
	}
	return n
}

// shape is what the guard knows of a selection set, fragments expanded:
// its depth, its aliased fields, its fields (a lower bound of its cost,
// since gqlgen prices every field at 1 or more), and how often each
// response name is selected at its top level.
type shape struct {
	depth, aliases, fields int
	names                  map[string]int
}

type measurer struct {
	lim      Limits
	frags    map[string]*ast.FragmentDefinition
	memo     map[fragmentIn]*shape
	visiting map[string]bool
	err      *gqlerror.Error
}

// fragmentIn is a fragment measured in data (intro false) or below an
// introspection field, where another depth limit applies.
type fragmentIn struct {
	name  string
	intro bool
}

// MaxIntrospectionDepth is how deep fields may nest from __schema or
// __type down, that field included. The depth limit bounds the data a
// query reads; introspection reads the schema, which is small and fixed,
// and the introspection queries of GraphiQL and of the common clients and
// code generators (graphql-js's getIntrospectionQuery, which Apollo,
// graphql-codegen and Relay's get-graphql-schema use, with its TypeRef of
// 7 to 9 ofType levels) nest 15 or 16 deep. A hostile ofType chain is
// refused past it; the validator's MaxIntrospectionDepth rule bounds
// fields/interfaces/possibleTypes/inputFields nesting on its own.
const MaxIntrospectionDepth = 20

// measure checks every operation and fragment of a parsed, unvalidated
// document against the limits, each operation on its own. Each fragment is measured once, so a chain
// of fragments that doubles at each step costs its length, not its
// expansion; a fragment cycle counts as empty (the validator refuses it).
func measure(doc *ast.QueryDocument, lim Limits) *gqlerror.Error {
	m := &measurer{
		lim:      lim,
		frags:    make(map[string]*ast.FragmentDefinition, len(doc.Fragments)),
		memo:     map[fragmentIn]*shape{},
		visiting: map[string]bool{},
	}
	for _, f := range doc.Fragments {
		if _, dup := m.frags[f.Name]; !dup {
			m.frags[f.Name] = f
		}
	}
	for _, op := range doc.Operations {
		m.set(op.SelectionSet, false)
		if m.err != nil {
			return m.err
		}
	}
	// Fragments no operation uses are validated too (and refused as unused):
	// they must not be slow to validate either.
	for _, f := range doc.Fragments {
		m.fragment(f.Name, strings.HasPrefix(f.TypeCondition, "__"))
		if m.err != nil {
			return m.err
		}
	}
	return nil
}

func (m *measurer) check(sh *shape) *gqlerror.Error {
	switch {
	case sh.aliases > m.lim.MaxAliases:
		return refusal(CodeAliasLimit, fmt.Sprintf("the document has more than %d aliased fields", m.lim.MaxAliases),
			map[string]any{"limit": m.lim.MaxAliases})
	case sh.fields > m.lim.MaxCost:
		return costRefusal(sh.fields, m.lim.MaxCost, true)
	}
	return nil
}

// fragment measures a fragment where it is spread: in data, or below an
// introspection field (intro).
func (m *measurer) fragment(name string, intro bool) *shape {
	key := fragmentIn{name, intro}
	if sh, ok := m.memo[key]; ok {
		return sh
	}
	def := m.frags[name]
	if def == nil || m.visiting[name] {
		return &shape{}
	}
	m.visiting[name] = true
	sh := m.set(def.SelectionSet, intro)
	delete(m.visiting, name)
	m.memo[key] = sh
	return sh
}

// set measures a selection set; inIntro is true below __schema or __type,
// where MaxIntrospectionDepth bounds the depth instead of MaxDepth. An
// introspection field counts 1 towards the depth of the data around it.
func (m *measurer) set(sel ast.SelectionSet, inIntro bool) *shape {
	maxDepth := m.lim.MaxDepth
	if inIntro {
		maxDepth = MaxIntrospectionDepth
	}
	sh := &shape{names: map[string]int{}}
	merge := func(sub *shape) {
		sh.depth = max(sh.depth, sub.depth)
		sh.aliases = satAdd(sh.aliases, sub.aliases)
		sh.fields = satAdd(sh.fields, sub.fields)
		for k, n := range sub.names {
			if m.count(sh, k, n) {
				return
			}
		}
	}
	for _, s := range sel {
		if m.err != nil {
			return sh
		}
		switch s := s.(type) {
		case *ast.Field:
			key := s.Alias
			if key == "" {
				key = s.Name
			}
			if m.count(sh, key, 1) {
				return sh
			}
			if key != s.Name {
				sh.aliases = satAdd(sh.aliases, 1)
			}
			root := !inIntro && (s.Name == "__schema" || s.Name == "__type")
			intro := inIntro || root
			var child *shape
			if len(s.SelectionSet) > 0 {
				child = m.set(s.SelectionSet, intro)
				if m.err != nil {
					return sh
				}
			} else {
				child = &shape{}
			}
			sh.aliases = satAdd(sh.aliases, child.aliases)
			if s.Name != "__schema" { // gqlgen's complexity leaves __schema out
				sh.fields = satAdd(sh.fields, satAdd(1, child.fields))
			}
			d := satAdd(1, child.depth)
			if root {
				if d > MaxIntrospectionDepth {
					m.err = introspectionDepthRefusal()
					return sh
				}
				d = 1
			}
			sh.depth = max(sh.depth, d)
		case *ast.InlineFragment:
			merge(m.set(s.SelectionSet, inIntro))
		case *ast.FragmentSpread:
			merge(m.fragment(s.Name, inIntro))
		}
		if m.err != nil {
			return sh
		}
		if sh.depth > maxDepth {
			if inIntro {
				m.err = introspectionDepthRefusal()
			} else {
				m.err = refusal(CodeDepthLimit, fmt.Sprintf("the document nests fields more than %d deep", m.lim.MaxDepth),
					map[string]any{"limit": m.lim.MaxDepth})
			}
			return sh
		}
		if e := m.check(sh); e != nil {
			m.err = e
			return sh
		}
	}
	return sh
}

func introspectionDepthRefusal() *gqlerror.Error {
	return refusal(CodeDepthLimit, fmt.Sprintf("the introspection nests fields more than %d deep", MaxIntrospectionDepth),
		map[string]any{"limit": MaxIntrospectionDepth, "introspection": true})
}

// count adds n selections of the response name key to sh; true when that
// is over MaxRepeats (m.err is set).
func (m *measurer) count(sh *shape, key string, n int) bool {
	c := satAdd(sh.names[key], n)
	sh.names[key] = c
	if c > MaxRepeats {
		m.err = refusal(CodeRepeatLimit,
			fmt.Sprintf("%q is selected %d times in one selection set; at most %d are allowed", key, c, MaxRepeats),
			map[string]any{"field": key, "limit": MaxRepeats})
		return true
	}
	return false
}

func satAdd(a, b int) int {
	if a > int(^uint(0)>>1)-b {
		return int(^uint(0) >> 1)
	}
	return a + b
}
