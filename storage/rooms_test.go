package storage_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

// storeInterfaces are the root interfaces the store implements, each in
// one room.
var storeInterfaces = map[string]reflect.Type{
	"IncidentService":       reflect.TypeFor[incidentlib.IncidentService](),
	"IncidentSets":          reflect.TypeFor[incidentlib.IncidentSets](),
	"IncidentAggregates":    reflect.TypeFor[incidentlib.IncidentAggregates](),
	"Snapshots":             reflect.TypeFor[incidentlib.Snapshots](),
	"ChangeLog":             reflect.TypeFor[incidentlib.ChangeLog](),
	"ChangeApplier":         reflect.TypeFor[incidentlib.ChangeApplier](),
	"RecordReader":          reflect.TypeFor[incidentlib.RecordReader](),
	"SourceCheckStore":      reflect.TypeFor[incidentlib.SourceCheckStore](),
	"IncidentWriter":        reflect.TypeFor[incidentlib.IncidentWriter](),
	"HistoryWriter":         reflect.TypeFor[incidentlib.HistoryWriter](),
	"HistoryService":        reflect.TypeFor[incidentlib.HistoryService](),
	"HistoryLog":            reflect.TypeFor[incidentlib.HistoryLog](),
	"HistoryImporter":       reflect.TypeFor[incidentlib.HistoryImporter](),
	"TokenService":          reflect.TypeFor[incidentlib.TokenService](),
	"TokenIssuer":           reflect.TypeFor[incidentlib.TokenIssuer](),
	"TokenReader":           reflect.TypeFor[incidentlib.TokenReader](),
	"TokenWriter":           reflect.TypeFor[incidentlib.TokenWriter](),
	"TaxonomyService":       reflect.TypeFor[incidentlib.TaxonomyService](),
	"OrganizationService":   reflect.TypeFor[incidentlib.OrganizationService](),
	"TaxonomyAdmin":         reflect.TypeFor[incidentlib.TaxonomyAdmin](),
	"TaxonomyWriter":        reflect.TypeFor[incidentlib.TaxonomyWriter](),
	"TaxonomyHistoryReader": reflect.TypeFor[incidentlib.TaxonomyHistoryReader](),
	"TaxonomyLog":           reflect.TypeFor[incidentlib.TaxonomyLog](),
	"TaxonomyApplier":       reflect.TypeFor[incidentlib.TaxonomyApplier](),
	"GlossaryReader":        reflect.TypeFor[incidentlib.GlossaryReader](),
	"LogApplier":            reflect.TypeFor[incidentlib.LogApplier](),
	"LogGrouper":            reflect.TypeFor[incidentlib.LogGrouper](),
	"StoreMonitor":          reflect.TypeFor[incidentlib.StoreMonitor](),
	"Backuper":              reflect.TypeFor[incidentlib.Backuper](),
}

// notRooms are the root interfaces no single room implements, and why.
var notRooms = map[string]string{
	"Writer":               "the whole write side across rooms: storage.Writer forwards to them",
	"Reader":               "a read snapshot's reads (incidents and organizations): the snapshot and storage.Reads",
	"Snapshot":             "a read snapshot, made by Incidents.ReadSnapshot",
	"RemoteIncidentReader": "an upstream library's (upstream)",
	"SearchService":        "the search index's (search)",
	"LogGroup":             "a group's transaction, made by ClusterLog.ApplyLogGroup (loggroup.go)",
}

var rooms = []reflect.Type{
	reflect.TypeFor[storage.Incidents](),
	reflect.TypeFor[storage.Versions](),
	reflect.TypeFor[storage.Tokens](),
	reflect.TypeFor[storage.Taxonomies](),
	reflect.TypeFor[storage.ClusterLog](),
	reflect.TypeFor[storage.Maintenance](),
}

// Every root interface the store implements is implemented by exactly one
// room and asserted beside that room's declaration; every exported root
// interface is either one of them or named in notRooms, so that a new one
// fails here until it has a room.
func TestEveryRootInterfaceHasOneRoom(t *testing.T) {
	for _, name := range rootInterfaces(t) {
		if _, ok := storeInterfaces[name]; !ok && notRooms[name] == "" {
			t.Errorf("incidentlib.%s: no room implements it and it is not in notRooms", name)
		}
	}
	decls, asserted := roomAssertions(t)
	for name, it := range storeInterfaces {
		var in []string
		for _, r := range rooms {
			if r.Implements(it) {
				in = append(in, r.Name())
			}
		}
		if len(in) != 1 {
			t.Errorf("incidentlib.%s is implemented by %d rooms %v, want 1", name, len(in), in)
			continue
		}
		if got := asserted[name]; len(got) != 1 || got[0] != in[0] {
			t.Errorf("incidentlib.%s: asserted for %v beside a room's declaration, want for %s only", name, got, in[0])
		}
	}
	for name := range asserted {
		if _, ok := storeInterfaces[name]; !ok {
			t.Errorf("incidentlib.%s is asserted for a room but missing from storeInterfaces", name)
		}
	}
	for _, r := range rooms {
		if decls[r.Name()] == "" {
			t.Errorf("room %s: no declaration found", r.Name())
		}
	}
}

// *DB opens and closes the file and returns its rooms and the values
// that forward to them: a method added to it instead of to a room fails
// here. Every room and forwarding value is named as the store in a
// refused write (storage.StoreValues, writeMethod).
func TestDBHoldsOnlyItsRooms(t *testing.T) {
	own := map[string]bool{"Close": true, "Path": true, "StoreID": true, "Bolt": true,
		"Batch": true, "GroupCommit": true} // Batch, GroupCommit: fault_export_test.go's, for tests only
	forwarders := []reflect.Type{reflect.TypeFor[storage.Writer](), reflect.TypeFor[storage.Reads](), reflect.TypeFor[storage.Follower]()}
	returned := map[reflect.Type]bool{}
	db := reflect.TypeFor[*storage.DB]()
	for i := range db.NumMethod() {
		m := db.Method(i)
		if own[m.Name] {
			continue
		}
		if m.Type.NumIn() != 1 || m.Type.NumOut() != 1 || m.Type.Out(0).Name() != m.Name {
			t.Errorf("DB.%s is neither the file's nor a room's accessor: put it on the room that holds what it reads or writes", m.Name)
			continue
		}
		returned[m.Type.Out(0)] = true
	}
	for _, r := range append(slices.Clone(rooms), forwarders...) {
		if !returned[r] {
			t.Errorf("no accessor of DB returns %s", r.Name())
		}
		if !storage.StoreValues[r.Name()] {
			t.Errorf("%s is not in storeValues: a write it refuses would not name the store's method", r.Name())
		}
	}
	if len(returned) != len(rooms)+len(forwarders) {
		t.Errorf("DB returns %d values, want the %d rooms and the %d forwarding values: add a new one to this test's lists", len(returned), len(rooms), len(forwarders))
	}
}

// rootInterfaces lists the root package's exported interfaces.
func rootInterfaces(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, af := range parseFiles(t, "..") {
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				if _, ok := ts.Type.(*ast.InterfaceType); ok && ts.Name.IsExported() {
					out = append(out, ts.Name.Name)
				}
			}
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatal("no root interfaces found")
	}
	return out
}

// roomAssertions reads storage's files: the file each room is declared
// in, and for each root interface the rooms it is asserted for
// (var _ incidentlib.X = Room{}) in the file that declares the room.
func roomAssertions(t *testing.T) (decls map[string]string, asserted map[string][]string) {
	t.Helper()
	decls, asserted = map[string]string{}, map[string][]string{}
	isRoom := map[string]bool{}
	for _, r := range rooms {
		isRoom[r.Name()] = true
	}
	type assertion struct{ file, iface, room string }
	var all []assertion
	for f, af := range parseFiles(t, ".") {
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range gd.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if isRoom[s.Name.Name] {
						decls[s.Name.Name] = f
					}
				case *ast.ValueSpec:
					sel, ok := s.Type.(*ast.SelectorExpr)
					if !ok || len(s.Values) != 1 || len(s.Names) != 1 || s.Names[0].Name != "_" {
						continue
					}
					if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "incidentlib" {
						continue
					}
					if cl, ok := s.Values[0].(*ast.CompositeLit); ok {
						if id, ok := cl.Type.(*ast.Ident); ok {
							all = append(all, assertion{f, sel.Sel.Name, id.Name})
						}
					}
				}
			}
		}
	}
	for _, a := range all {
		if isRoom[a.room] && decls[a.room] == a.file {
			asserted[a.iface] = append(asserted[a.iface], a.room)
		}
	}
	return decls, asserted
}

// parseFiles parses the non-test Go files of dir, by file name.
func parseFiles(t *testing.T, dir string) map[string]*ast.File {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*ast.File{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = af
	}
	return out
}
