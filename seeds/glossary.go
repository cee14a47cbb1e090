package seeds

import (
	"slices"
	"strings"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/glossary"
)

// Glossary returns the built-in glossary: the entries of glossary.json,
// then one entry per label of the taxonomy tax (its English and Korean
// label) that the file does not already pair. A label whose English the
// file has gets the Korean label added to that entry, so the file never
// repeats the taxonomy and the two cannot disagree.
func Glossary(tax *incidentlib.Taxonomy) ([]glossary.Entry, error) {
	data, err := files.ReadFile("glossary.json")
	if err != nil {
		return nil, err
	}
	entries, err := glossary.Parse(data)
	if err != nil {
		return nil, err
	}
	return WithLabels(entries, tax), nil
}

// WithLabels returns entries with the labels of tax paired as Glossary
// describes.
func WithLabels(entries []glossary.Entry, tax *incidentlib.Taxonomy) []glossary.Entry {
	out := slices.Clone(entries)
	byEn := map[string]int{}
	for i, e := range out {
		for _, f := range e.En {
			if _, ok := byEn[strings.ToLower(f)]; !ok {
				byEn[strings.ToLower(f)] = i
			}
		}
	}
	for _, t := range tax.Terms {
		en, ko := t.Label.En, t.Label.Ko
		if en == "" || ko == "" {
			continue
		}
		if i, ok := byEn[strings.ToLower(en)]; ok {
			if !slices.ContainsFunc(out[i].Ko, func(k string) bool { return strings.EqualFold(k, ko) }) && len(out[i].Ko) < glossary.MaxForms {
				out[i].Ko = append(slices.Clone(out[i].Ko), ko)
			}
			continue
		}
		byEn[strings.ToLower(en)] = len(out)
		out = append(out, glossary.Entry{En: []string{en}, Ko: []string{ko}})
	}
	return out
}

// GlossaryReader returns a glossary.Reader of the built-in glossary at
// version 1, for a program without a store's glossary.
func GlossaryReader() (glossary.Reader, error) {
	entries, err := Glossary(MustTaxonomy())
	if err != nil {
		return nil, err
	}
	return glossary.Static{G: &glossary.Glossary{Entries: entries, Version: 1}}, nil
}
