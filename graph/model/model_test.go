package model

import (
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/seeds"
)

// TestViewTerms: every kind has its own slot, and a view finds the shared
// wrapper of every term of the taxonomy, by kind and slug, and nothing for
// a slug of another kind or an unknown kind.
func TestViewTerms(t *testing.T) {
	if len(incidentlib.TermKinds) != numKinds {
		t.Fatalf("%d term kinds, numKinds is %d", len(incidentlib.TermKinds), numKinds)
	}
	seen := map[int]incidentlib.TermKind{}
	for _, k := range incidentlib.TermKinds {
		s := kindSlot(k)
		if s < 0 || s >= numKinds {
			t.Fatalf("kindSlot(%q) = %d", k, s)
		}
		if other, dup := seen[s]; dup {
			t.Fatalf("kinds %q and %q share slot %d", other, k, s)
		}
		seen[s] = k
	}
	tax := seeds.MustTaxonomy()
	v := NewView(incidentlib.LangEn, tax)
	for _, term := range tax.Terms {
		w := v.Term(term.Kind, term.Slug)
		if w == nil || w.Term != term || w != v.NewTerm(term) {
			t.Fatalf("Term(%q, %q) = %v, want the shared wrapper of %v", term.Kind, term.Slug, w, term)
		}
		for _, k := range incidentlib.TermKinds {
			if k != term.Kind && tax.Term(k, term.Slug) == nil && v.Term(k, term.Slug) != nil {
				t.Fatalf("Term(%q, %q) found a term of kind %q", k, term.Slug, term.Kind)
			}
		}
	}
	if v.Term("nope", tax.Terms[0].Slug) != nil {
		t.Fatal("an unknown kind found a term")
	}
	if w := NewView(incidentlib.LangEn, nil).term(incidentlib.KindDomain, "x"); w != nil {
		t.Fatal("a view without a taxonomy found a term")
	}
}
