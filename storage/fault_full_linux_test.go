package storage_test

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/internal/testutil"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// TestFullDiskRefusalsDoNotWalkTheFile: a write that fails for want of
// space makes bbolt walk every page of the file to rebuild its free list
// (a read transaction of its own); while the disk stays full, the next
// writes are refused before any transaction, and a write goes through
// again once there is room. The full disk is a file-size limit
// (RLIMIT_FSIZE: EFBIG past it), on this test process.
func TestFullDiskRefusalsDoNotWalkTheFile(t *testing.T) {
	path, incs := testutil.StoreFile(t, 300)
	db, err := storage.Open(path, storage.Options{Taxonomy: seeds.MustTaxonomy()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(fi.Size()), Max: old.Max}); err != nil {
		t.Skipf("cannot set a file-size limit: %v", err)
	}
	limited := true
	defer func() {
		if limited {
			_ = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)
		}
	}()
	ctx := context.Background()
	long := strings.Repeat("The disk filled up while the write was in flight. ", 400) // ~20 KB
	n := 0
	write := func() (readTx int, err error) {
		inc := *incs[0]
		n++
		inc.ID = incidentlib.FormatID(uint32(9000 + n))
		inc.Summary = incidentlib.Text{En: long}
		inc.Related, inc.RecurrenceOf = nil, ""
		before := db.Maintenance().StoreStats().ReadTxTotal
		_, err = db.Incidents().UpsertIncident(ctx, &inc, incidentlib.WriteOptions{})
		return db.Maintenance().StoreStats().ReadTxTotal - before, err
	}
	first := -1
	for range 400 {
		tx, err := write()
		if err == nil {
			continue
		}
		if code := incidentlib.ErrorCode(err); code != incidentlib.ESTORAGEFULL {
			t.Fatalf("a write on a full disk: %v (code %s), want STORAGE_FULL", err, code)
		}
		first = tx
		break
	}
	if first < 0 {
		t.Fatalf("400 writes of 20 KB fitted under a limit of %d bytes", fi.Size())
	}
	for range 3 {
		tx, err := write()
		if code := incidentlib.ErrorCode(err); code != incidentlib.ESTORAGEFULL {
			t.Fatalf("a write on a disk still full: %v (code %s), want STORAGE_FULL", err, code)
		}
		if tx >= first {
			t.Fatalf("a write refused on a disk still full started %d read transactions, as many as the first (%d, bbolt's walk of the file included)", tx, first)
		}
	}
	if got := db.Maintenance().StoreStats().FullErrors; got != 4 {
		t.Errorf("%d writes counted as refused for a full disk, want 4", got)
	}
	// Room again: writes go through.
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	limited = false
	if _, err := write(); err != nil {
		t.Fatalf("a write once there is room again: %v", err)
	}
	if problems, err := db.Maintenance().Check(ctx); err != nil || len(problems) != 0 {
		t.Fatalf("check after the full disk: %v %v", err, problems)
	}
}
