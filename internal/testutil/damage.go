package testutil

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/gen"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// Damage is a way to break a store file at a page boundary, as a failing
// disk or a bad copy does.
type Damage string

// The damages the fault tests apply.
const (
	// Truncated cuts the file to half its pages.
	Truncated Damage = "truncated"
	// FlippedBranch flips bytes of the incidents bucket's root (a branch
	// page): its page flags and its first child's page id.
	FlippedBranch Damage = "flipped-branch"
	// FlippedLeaf flips the header of the incidents bucket's first leaf.
	FlippedLeaf Damage = "flipped-leaf"
	// ZeroedPage zeroes the incidents bucket's first leaf page.
	ZeroedPage Damage = "zeroed-page"
)

// Damages lists every Damage.
var Damages = []Damage{Truncated, FlippedBranch, FlippedLeaf, ZeroedPage}

// StoreFile makes a closed store file of n generated incidents in a
// temporary directory and returns its path and the incidents.
func StoreFile(tb testing.TB, n int) (string, []*incidentlib.Incident) {
	tb.Helper()
	tax := seeds.MustTaxonomy()
	incs, err := gen.Generate(gen.Options{Count: n, Seed: 21, Taxonomy: tax})
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "store.db")
	db, err := storage.Open(path, storage.Options{Taxonomy: tax})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Incidents().ImportIncidents(context.Background(), incs, incidentlib.ImportOptions{KeepUpdatedAt: true}); err != nil {
		tb.Fatal(err)
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	return path, incs
}

// PageLayout is where the incidents bucket of a store file lies.
type PageLayout struct {
	PageSize int64
	// Root is the incidents bucket's root page (a branch page in a store
	// of a few hundred incidents); Leaf its first child.
	Root, Leaf int64
	// Pages is the file's high-water mark, in pages.
	Pages int64
}

// Layout reads the page layout of the closed store file at path.
func Layout(tb testing.TB, path string) PageLayout {
	tb.Helper()
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer b.Close()
	var l PageLayout
	l.PageSize = int64(b.Info().PageSize)
	err = b.View(func(tx *bolt.Tx) error {
		l.Root = int64(tx.Bucket([]byte("incidents")).RootPage())
		l.Pages = tx.Size() / l.PageSize
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	page := readPage(tb, path, l, l.Root)
	if flags := binary.LittleEndian.Uint16(page[8:]); flags != 0x01 {
		tb.Fatalf("the incidents bucket's root page %d is not a branch page (flags %#x): make the store larger", l.Root, flags)
	}
	// The first branch element: pos u32, ksize u32, pgid u64, after the
	// 16-byte page header.
	l.Leaf = int64(binary.LittleEndian.Uint64(page[16+8:]))
	return l
}

func readPage(tb testing.TB, path string, l PageLayout, id int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, l.PageSize)
	if _, err := f.ReadAt(b, id*l.PageSize); err != nil {
		tb.Fatal(err)
	}
	return b
}

// Break applies d to the closed store file at path and returns the page
// it damaged.
func Break(tb testing.TB, path string, d Damage) int64 {
	tb.Helper()
	return BreakAt(tb, path, Layout(tb, path), d)
}

// BreakAt is Break with the layout read before: the file may be open in a
// running store, under which the damage then appears as a failing disk's
// would.
func BreakAt(tb testing.TB, path string, l PageLayout, d Damage) int64 {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	write := func(id int64, off int64, b []byte) {
		if _, err := f.WriteAt(b, id*l.PageSize+off); err != nil {
			tb.Fatal(err)
		}
	}
	page := func(id int64) []byte { return readPage(tb, path, l, id) }
	var damaged int64
	switch d {
	case Truncated:
		damaged = l.Pages / 2
		if err := f.Truncate(damaged * l.PageSize); err != nil {
			tb.Fatal(err)
		}
	case FlippedBranch:
		p := page(l.Root)
		p[8] ^= 0xff  // flags
		p[24] ^= 0x5a // low byte of the first child's page id
		write(l.Root, 0, p[:32])
		damaged = l.Root
	case FlippedLeaf:
		p := page(l.Leaf)
		for i := range 16 {
			p[i] ^= 0xa5
		}
		write(l.Leaf, 0, p[:16])
		damaged = l.Leaf
	case ZeroedPage:
		write(l.Leaf, 0, make([]byte, l.PageSize))
		damaged = l.Leaf
	default:
		tb.Fatalf("unknown damage %q", d)
	}
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	return damaged
}
