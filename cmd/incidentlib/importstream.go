package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/importer"
	"github.com/incidentlib/incidentlib/seeds"
	"github.com/incidentlib/incidentlib/storage"
)

// A bulk import of IL-JSON streams: a first pass reads every record,
// checks it and the links between records (keeping ids and link targets,
// not records), and writes nothing if anything is wrong; a second pass
// reads the input again and writes it in batches of --batch records (and
// at most importBatchBytes) per transaction. Standard input is spooled to
// a file beside the store so that it can be read twice. Other formats
// (Markdown collections, JSON lists) and IL-JSON records without ids are
// planned in memory (importlocal.go): their ids depend on the store.

// importBatchBytes bounds the IL-JSON bytes of one batch.
const importBatchBytes = 16 << 20

// envImportStopAfter is a test hook: after writing this many batches the
// import stops and waits to be killed, so that a test kills it between
// batches without racing it.
const envImportStopAfter = "INCIDENTLIB_TEST_IMPORT_STOP_AFTER"

// importHeld counts what a streamed import holds at once (for the tests:
// a quantity that does not depend on the machine).
var importHeld struct {
	maxRecords int // records held at once for writing (or sending)
	maxBytes   int // their IL-JSON bytes
	maxAhead   int // records read ahead, being decoded (importer.StreamAhead)
}

// importInput is one file an import reads: its path and the name that
// messages give it.
type importInput struct{ path, name string }

// importInputs lists the inputs of an import, spooling standard input
// ("-") to a temporary file in dir (the store's folder: the same file
// system). cleanup removes the spool.
func importInputs(args []string, stdin io.Reader, dir string) (inputs []importInput, cleanup func(), err error) {
	cleanup = func() {}
	for _, a := range args {
		if a != "-" {
			inputs = append(inputs, importInput{a, a})
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, cleanup, err
		}
		f, err := os.CreateTemp(dir, ".import-stdin-*")
		if err != nil {
			return nil, cleanup, fmt.Errorf("spool standard input: %w", err)
		}
		prev := cleanup
		cleanup = func() { prev(); os.Remove(f.Name()) }
		if _, err := io.Copy(f, stdin); err != nil {
			f.Close()
			return nil, cleanup, fmt.Errorf("spool standard input to %s: %w", f.Name(), err)
		}
		if err := f.Close(); err != nil {
			return nil, cleanup, err
		}
		inputs = append(inputs, importInput{f.Name(), "stdin"})
	}
	return inputs, cleanup, nil
}

// streamFiles expands directories and returns the files of a streamed
// import and the files that hold no records, or ok false when a file is
// not IL-JSON (the import is then planned in memory).
func streamFiles(inputs []importInput, format string) (files []importInput, skipped []importer.Skip, ok bool, err error) {
	if format != "" && format != string(importer.FormatILJSON) && format != string(importer.FormatJSONL) {
		return nil, nil, false, nil
	}
	for _, in := range inputs {
		paths := []string{in.path}
		if in.name == in.path {
			if paths, err = importer.ListFiles(in.path); err != nil {
				return nil, nil, false, err
			}
		}
		for _, p := range paths {
			name := p
			if in.name != in.path {
				name = in.name
			}
			prefix, err := readPrefix(p, 64<<10)
			if err != nil {
				return nil, nil, false, err
			}
			if format == "" {
				if _, err := importer.DetectData(name, prefix); err != nil && len(prefix) > 0 {
					skipped = append(skipped, importer.Skip{Path: name, Reason: incidentlib.ErrorMessage(err)[len(name)+2:]})
					continue
				}
				if importer.StreamFormat(name, prefix) == "" {
					return nil, nil, false, nil
				}
			}
			files = append(files, importInput{p, name})
		}
	}
	return files, skipped, true, nil
}

func readPrefix(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	m, err := io.ReadFull(f, b)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return b[:m], err
}

// errNeedsPlan says a streamed import met a record without an id.
var errNeedsPlan = errors.New("a record has no id")

// streamRecords reads every record of files through the importer, calling
// each with the good ones and their sequence numbers (the same on every
// pass) and bad with the problems. decodeOnly skips the checks, for a
// second pass.
func streamRecords(files []importInput, maxRecord int, decodeOnly bool, each func(rec importer.Record, seq uint32, size int) error, bad func(importer.Problem)) error {
	tax, err := seeds.Taxonomy()
	if err != nil {
		return err
	}
	s := importer.NewStreamer(importer.Options{Format: importer.FormatILJSON, Taxonomy: tax}, maxRecord)
	s.DecodeOnly = decodeOnly
	if decodeOnly {
		// The second pass writes: the decoding goroutines encode each
		// record's stored form too, ahead of the writer.
		s.Encode = storage.CanonicalJSON
	}
	for _, in := range files {
		f, err := os.Open(in.path)
		if err != nil {
			return err
		}
		err = s.Stream(in.name, f, func(rec importer.Record, size int) error {
			return each(rec, uint32(s.Seq()-1), size)
		}, bad)
		importHeld.maxAhead = max(importHeld.maxAhead, s.MaxHeld())
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// importOptions are the settings of one import --db.
type importOptions struct {
	skipBad   bool
	maxRecord int
	batch     int
	stopAfter int // test hook: batches to write before waiting to be killed; 0: off
}

// importStream imports IL-JSON files into db in two passes (see above). It
// returns errNeedsPlan, having written nothing, if a record has no id.
func importStream(ctx context.Context, db *storage.DB, files []importInput, skipped []importer.Skip, o importOptions, stdout, stderr io.Writer) error {
	// Pass 1: check everything, keep ids and links.
	chk := db.Incidents().NewImportCheck(o.maxRecord)
	good := roaring.New() // sequence numbers of the records to write
	var problems []string
	err := streamRecords(files, o.maxRecord, false, func(rec importer.Record, seq uint32, size int) error {
		if rec.Incident.ID == "" {
			return errNeedsPlan
		}
		trackHeld(1, size)
		if err := chk.AddValidated(rec.Incident, size); err != nil { // the importer ran Validate
			for _, e := range incidentlib.ErrorList(err) {
				problems = append(problems, rec.Where+": "+e.Message)
			}
			return nil
		}
		good.Add(seq)
		return nil
	}, func(p importer.Problem) { problems = append(problems, p.String()) })
	if err != nil {
		return err
	}
	if len(problems) > 0 && !o.skipBad {
		return reportProblems(stderr, problems)
	}
	if err := chk.Finish(ctx); err != nil {
		return reportInvalid(stderr, err)
	}
	interrupted, err := db.Incidents().InterruptedImport(ctx)
	if err != nil {
		return err
	}
	if interrupted != nil {
		fmt.Fprintf(stderr, "import: %s; this import indexes what it left unindexed\n", interrupted)
	}

	// Pass 2: write in batches.
	total := chk.Records()
	prog := newProgress(stderr, "writing")
	imp := db.Incidents().NewBatchedImport(total, storage.BatchedImportOptions{KeepUpdatedAt: true})
	var res incidentlib.ImportResult
	batch := make([]*incidentlib.Incident, 0, o.batch)
	encoded := make([][]byte, 0, o.batch)
	batchBytes, done, batches := 0, 0, 0
	flush := func() error {
		trackHeld(len(batch), batchBytes)
		last := done+len(batch) == total
		r, err := imp.WriteEncoded(ctx, batch, encoded, last)
		if err != nil {
			if done > 0 {
				fmt.Fprintf(stderr, "import: stopped after %d of %d records; fix the cause and re-run it: imports are idempotent\n", done, total)
			}
			return err
		}
		addResult(&res, r)
		done += len(batch)
		clear(batch)
		clear(encoded)
		batch, encoded, batchBytes = batch[:0], encoded[:0], 0
		batches++
		prog.update(done, total)
		if o.stopAfter > 0 && batches == o.stopAfter && !last {
			fmt.Fprintf(stderr, "import: stopped after batch %d (%s)\n", batches, envImportStopAfter)
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	err = streamRecords(files, o.maxRecord, true, func(rec importer.Record, seq uint32, size int) error {
		if !good.Contains(seq) {
			return nil
		}
		if done+len(batch) >= total {
			return errors.New("import: the input changed while it was imported; re-run it")
		}
		batch = append(batch, rec.Incident)
		encoded = append(encoded, rec.Encoded)
		batchBytes += size
		if len(batch) >= o.batch || batchBytes >= importBatchBytes || done+len(batch) == total {
			return flush()
		}
		return nil
	}, func(importer.Problem) {})
	if err != nil {
		return err
	}
	if done != total {
		return fmt.Errorf("import: the input changed while it was imported (%d of %d records read again); re-run it", done, total)
	}
	fmt.Fprintf(stdout, "imported %d records into %d incidents: %d created, %d updated, 0 merged; %d incidents written, %d unchanged\n",
		total, total, res.Created, res.Updated+res.Unchanged, res.Created+res.Updated, res.Unchanged)
	reportSkipped(stdout, problems, skipped)
	return nil
}

func trackHeld(records, bytes int) {
	importHeld.maxRecords = max(importHeld.maxRecords, records)
	importHeld.maxBytes = max(importHeld.maxBytes, bytes)
}

// addMaxRecordFlag is --max-record: the size limit of one record.
func addMaxRecordFlag(f *flags) *byteSize {
	m := f.bytes("max-record", incidentlib.DefaultMaxRecordBytes, false,
		"largest record, in bytes of its IL-JSON as read; a larger record is refused")
	f.checks = append(f.checks, func() error {
		if *m < 1<<10 {
			return fmt.Errorf("--max-record must be at least 1KiB, got %s", m)
		}
		if *m > 1<<30 {
			return fmt.Errorf("--max-record must be at most 1GiB, got %s", m)
		}
		return nil
	})
	return m
}

// stopAfterHook reads the test hook envImportStopAfter.
func stopAfterHook(getenv func(string) string) int {
	n, _ := strconv.Atoi(getenv(envImportStopAfter))
	return n
}

// spoolDir is the folder of the store at path, where standard input is
// spooled.
func spoolDir(path string) string { return filepath.Dir(path) }
