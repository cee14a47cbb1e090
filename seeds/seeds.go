// Package seeds embeds the library's seed data: the taxonomy every store
// holds, and the seed incidents loaded into an empty store.
package seeds

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/importer"
)

//go:embed taxonomy.json incidents glossary.json
var files embed.FS

// Taxonomy returns the embedded taxonomy.
func Taxonomy() (*incidentlib.Taxonomy, error) {
	data, err := files.ReadFile("taxonomy.json")
	if err != nil {
		return nil, err
	}
	return incidentlib.ParseTaxonomy(data)
}

// MustTaxonomy returns the embedded taxonomy and panics if it is broken,
// which a test guards against.
func MustTaxonomy() *incidentlib.Taxonomy {
	t, err := Taxonomy()
	if err != nil {
		panic(err)
	}
	return t
}

// Incidents returns the seed incidents, in file name order.
func Incidents() ([]*incidentlib.Incident, error) {
	names, err := fs.Glob(files, "incidents/*")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*incidentlib.Incident
	for _, name := range names {
		ext := path.Ext(name)
		if ext != ".json" && ext != ".jsonl" {
			continue
		}
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		recs, err := importer.ReadRecords("seeds/"+name, data)
		if err != nil {
			return nil, fmt.Errorf("seed file: %w", err)
		}
		for _, r := range recs {
			out = append(out, r.Incident)
		}
	}
	return out, nil
}

// File returns the bytes of one embedded seed file, such as
// "incidents/000-roblox-consul.json".
func File(name string) ([]byte, error) { return files.ReadFile(name) }
