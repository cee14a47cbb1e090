package incidentlib_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The arrows between the packages of the module (docs/design.md). The
// domain (the root package) is the only seam: the store, the search
// index, the replica, the link checker, the resolvers and the HTTP edge
// know one another only through its interfaces, and cmd/... alone wires
// the concrete types.

const module = "github.com/incidentlib/incidentlib"

// listedPackage is a package as `go list -json` describes it: its
// non-test imports.
type listedPackage struct {
	ImportPath string
	Imports    []string
}

// codecUsers are the packages that may import the codec (iljson), by
// path in the module ("" is the root package): the domain, the readers
// and writers of IL-JSON (upstream peeks at a record's id), and the
// change feed with its reader; the HTTP edge (server/...) writes the feed
// and checks request bodies' UTF-8 with it too; the binary
// (cmd/incidentlib) reads the lines of history files with it
// (iljson.EachLine, as storage's history import does); a cluster node
// reads the log's messages, which carry records, with it.
var codecUsers = map[string]bool{
	"": true, "/storage": true, "/importer": true, "/search": true, "/graph": true, "/graph/model": true,
	"/upstream": true, "/changefeed": true, "/replica": true, "/cmd/incidentlib": true,
	"/cluster": true, // reads the log's messages, records inside, in one pass
}

// importRules returns one line per import of pkgs that breaks an arrow of
// the design, in the order of pkgs and their imports.
func importRules(pkgs []listedPackage) []string {
	ours := func(p string) bool { return p == module || strings.HasPrefix(p, module+"/") }
	under := func(p, dir string) bool {
		p = strings.TrimPrefix(p, module)
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	var bad []string
	for _, pkg := range pkgs {
		from := pkg.ImportPath
		if !ours(from) {
			continue
		}
		for _, to := range pkg.Imports {
			if !ours(to) || to == from {
				continue
			}
			var why string
			switch {
			case from == module && to != module+"/iljson":
				why = "the root package imports no package of the module but the codec (iljson)"
			case from == module+"/iljson":
				why = "the codec (iljson) imports nothing of ours: it is below the root package"
			case to == module+"/iljson" && !codecUsers[strings.TrimPrefix(from, module)] && !under(from, "/server"):
				why = "only the root package, storage, importer, search, graph, upstream, changefeed, the feed's users (server/..., replica), the cluster's log (cluster) and the binary (cmd/incidentlib) may import the codec (iljson)"
			case from == module+"/filterexpr" && to != module:
				why = "filterexpr imports nothing of ours but the root package: it is the root's rules of a whole filter, kept beside it"
			case to == module+"/filterexpr":
				// The root's rules of a whole filter (bounds, validation at
				// every depth, JSON form), beside the root for its size bound:
				// whoever imports the root may import it.
			case from == module+"/glossary" && to != module:
				why = "glossary imports nothing of ours but the root package: it is the root's rules of a glossary entry, kept beside it"
			case to == module+"/glossary":
				// The root's rules of a glossary entry (validation, keys,
				// bounds, the file's form), beside the root for its size
				// bound: whoever imports the root may import it.
			case from == module+"/changefeed" && to != module && to != module+"/iljson":
				why = "changefeed imports nothing of ours but the root package and the codec"
			case to == module+"/storage" && !under(from, "/cmd") && from != module+"/internal/testutil":
				why = "only cmd/... (and internal/testutil for tests) may import storage"
			case from == module+"/storage" && to != module && to != module+"/iljson":
				why = "storage imports nothing of ours but the root package and the codec"
			case from == module+"/tracing":
				why = "tracing imports nothing of ours: every package may call its hooks"
			case from == module+"/outbound":
				why = "outbound imports nothing of ours (it propagates trace context through the OTel API itself)"
			case to == module+"/tracing":
				// A leaf, like a third-party API: the one place of the tracing rules.
			case from == module+"/cluster" && to != module && to != module+"/iljson":
				why = "cluster imports nothing of ours but the root package and the codec: cmd hands it the store as the root's interfaces"
			case from == module+"/citation":
				why = "citation imports nothing of ours: it formats the work graph hands it"
			case to == module+"/citation":
				// A leaf of the standard library alone: the one place of the citation formats.
			case (from == module+"/graph" || from == module+"/graph/model") && to != module && to != module+"/graph/model" && to != module+"/iljson":
				why = "graph imports nothing of ours but the root package, graph/model and the codec"
			case from == module+"/live" && to != module:
				why = "live imports nothing of ours but the root package"
			case from == module+"/server/gqledge/respcache":
				why = "respcache imports nothing of ours: gqledge hands it keys, entries and writers"
			case to == module+"/server/gqledge/respcache" && !under(from, "/server/gqledge"):
				why = "only the edge (server/gqledge/...) uses the response cache"
			case from == module+"/server/gqledge" && to == module+"/server/gqledge/streams":
				why = "the subscription transports import the edge, not the other way: they plug in as gqledge.Streams"
			case to == module+"/server/gqledge/streams" && from != module+"/server":
				why = "only server, which wires the edge, imports the subscription transports"
			case from == module+"/mcpserver" && to != module && to != module+"/graph":
				why = "mcpserver imports nothing of ours but the root package and graph (whose schema its filter's JSON Schema comes from): its tools read through GraphQL alone"
			case to == module+"/internal/testutil":
				why = "internal/testutil is for tests only"
			}
			if why != "" {
				bad = append(bad, fmt.Sprintf("%s imports %s: %s", strings.TrimPrefix(from, module+"/"), strings.TrimPrefix(to, module+"/"), why))
			}
		}
	}
	return bad
}

// TestImportGraph lists the module's packages with the go tool and fails
// on any import that breaks an arrow of the design.
func TestImportGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("lists every package of the module")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	cmd := exec.Command(goTool, "list", "-e", "-json=ImportPath,Imports", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listedPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if !slices.ContainsFunc(pkgs, func(p listedPackage) bool { return p.ImportPath == module+"/storage" }) {
		t.Fatalf("go list found no storage package among %d packages: not run from the module's root?", len(pkgs))
	}
	for _, line := range importRules(pkgs) {
		t.Error(line)
	}
}

// TestImportRules: each arrow the design forbids is caught, and the
// allowed ones pass.
func TestImportRules(t *testing.T) {
	m := func(p string) string {
		if p == "" {
			return module
		}
		return module + "/" + p
	}
	for _, c := range []struct {
		name     string
		from, to string // "" is the root package
		bad      bool
	}{
		{"RootImportsStorage", "", "storage", true},
		{"RootImportsOutbound", "", "outbound", true},
		{"SearchImportsStorage", "search", "storage", true},
		{"GraphImportsStorage", "graph", "storage", true},
		{"ServerImportsStorage", "server/edge", "storage", true},
		{"StorageImportsGraph", "storage", "graph", true},
		{"StorageImportsSearch", "storage", "search", true},
		{"StorageImportsServer", "storage", "server/admin", true},
		{"StorageImportsSeeds", "storage", "seeds", true},
		{"OutboundImportsRoot", "outbound", "", true},
		{"GraphImportsOutbound", "graph", "outbound", true},
		{"GraphModelImportsSearch", "graph/model", "search", true},
		{"ServerImportsTestutil", "server", "internal/testutil", true},
		{"MCPImportsSearch", "mcpserver", "search", true},
		{"MCPImportsServer", "mcpserver", "server", true},
		{"MCPImportsGraph", "mcpserver", "graph", false},
		{"CmdImportsStorage", "cmd/incidentlib", "storage", false},
		{"BenchImportsStorage", "cmd/incidentlib-bench", "storage", false},
		{"TestutilImportsStorage", "internal/testutil", "storage", false},
		{"StorageImportsRoot", "storage", "", false},
		{"GraphImportsModel", "graph", "graph/model", false},
		{"SearchImportsRoot", "search", "", false},
		{"ReplicaImportsOutbound", "replica", "outbound", false},
		{"ClusterImportsStorage", "cluster", "storage", true},
		{"ClusterImportsServer", "cluster", "server", true},
		{"ClusterImportsRoot", "cluster", "", false},
		{"ClusterImportsCodec", "cluster", "iljson", false},
		{"StorageImportsFilterexpr", "storage", "filterexpr", false},
		{"GraphImportsFilterexpr", "graph", "filterexpr", false},
		{"FilterexprImportsStorage", "filterexpr", "storage", true},
		{"FilterexprImportsIljson", "filterexpr", "iljson", true},
		{"StorageImportsGlossary", "storage", "glossary", false},
		{"ClusterImportsGlossary", "cluster", "glossary", false},
		{"GlossaryImportsStorage", "glossary", "storage", true},
		{"GlossaryImportsIljson", "glossary", "iljson", true},
		{"CmdImportsCluster", "cmd/incidentlib", "cluster", false},
		{"LiveImportsRoot", "live", "", false},
		{"LiveImportsGraph", "live", "graph", true},
		{"EdgeImportsLive", "server/gqledge", "live", false},
		{"EdgeImportsRespcache", "server/gqledge", "server/gqledge/respcache", false},
		{"RespcacheImportsEdge", "server/gqledge/respcache", "server/gqledge", true},
		{"RespcacheImportsRoot", "server/gqledge/respcache", "", true},
		{"ServerImportsRespcache", "server", "server/gqledge/respcache", true},
		{"StreamsImportsEdge", "server/gqledge/streams", "server/gqledge", false},
		{"StreamsImportsLive", "server/gqledge/streams", "live", false},
		{"EdgeImportsStreams", "server/gqledge", "server/gqledge/streams", true},
		{"ServerImportsStreams", "server", "server/gqledge/streams", false},
		{"CmdImportsStreams", "cmd/incidentlib", "server/gqledge/streams", true},
		{"TracingImportsRoot", "tracing", "", true},
		{"TracingImportsOutbound", "tracing", "outbound", true},
		{"OutboundImportsTracing", "outbound", "tracing", true},
		{"ClusterImportsTracing", "cluster", "tracing", false},
		{"GraphImportsTracing", "graph", "tracing", false},
		{"RootImportsCodec", "", "iljson", false},
		{"CodecImportsRoot", "iljson", "", true},
		{"CodecImportsTracing", "iljson", "tracing", true},
		{"StorageImportsCodec", "storage", "iljson", false},
		{"ImporterImportsCodec", "importer", "iljson", false},
		{"SearchImportsCodec", "search", "iljson", false},
		{"GraphImportsCodec", "graph", "iljson", false},
		{"ReplicaImportsCodec", "replica", "iljson", false},
		{"ServerImportsCodec", "server/gqledge", "iljson", false},
		{"SeedsImportsCodec", "seeds", "iljson", true},
		{"LiveImportsCodec", "live", "iljson", true},
		{"ChangefeedImportsRoot", "changefeed", "", false},
		{"ChangefeedImportsCodec", "changefeed", "iljson", false},
		{"ChangefeedImportsStorage", "changefeed", "storage", true},
		{"ChangefeedImportsServer", "changefeed", "server/restapi", true},
		{"RestapiImportsChangefeed", "server/restapi", "changefeed", false},
		{"ReplicaImportsChangefeed", "replica", "changefeed", false},
		{"GraphImportsCitation", "graph", "citation", false},
		{"CitationImportsRoot", "citation", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := importRules([]listedPackage{{ImportPath: m(c.from), Imports: []string{"fmt", m(c.to)}}})
			if bad := len(got) > 0; bad != c.bad {
				t.Errorf("%s -> %s: broken arrows %q, want broken %v", m(c.from), m(c.to), got, c.bad)
			}
		})
	}
}

// TestNoBuiltFilesTracked: no file the repository tracks is a built
// program (an ELF, Mach-O or PE executable) or larger than 4 MiB: a
// benchmark binary once entered the tree with a commit of code, 57 MB in
// every clone since. The largest tracked files on purpose (GraphiQL's
// bundle, the generated resolvers) are about 1 MiB.
func TestNoBuiltFilesTracked(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (git ls-files: %v)", err)
	}
	magics := [][]byte{{0x7f, 'E', 'L', 'F'}, {0xcf, 0xfa, 0xed, 0xfe}, {0xfe, 0xed, 0xfa, 0xcf}, {'M', 'Z'}}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		f, err := os.Open(name)
		if err != nil {
			continue // deleted in the working tree
		}
		head := make([]byte, 4)
		n, _ := io.ReadFull(f, head)
		st, err := f.Stat()
		f.Close()
		if err != nil || st.IsDir() {
			continue
		}
		if st.Size() > 4<<20 {
			t.Errorf("%s is tracked and %d bytes: data that large belongs outside the repository (or in testdata made by a test)", name, st.Size())
		}
		for _, m := range magics {
			if n >= len(m) && bytes.Equal(head[:len(m)], m) {
				t.Errorf("%s is tracked and is a built program (it starts %q): add it to .gitignore and git rm --cached it", name, head[:len(m)])
			}
		}
	}
}
