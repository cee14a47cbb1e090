package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph/model"
	"github.com/incidentlib/incidentlib/iljson"
	"github.com/incidentlib/incidentlib/importer"
	"github.com/incidentlib/incidentlib/storage"
)

// Imports with history: import reads a history export (export --history:
// lines {"id":…,"history":[…]}) as well as plain records, telling them
// apart per file. A history is written as given, adding no version, into
// a store that holds none of its ids; history import is the same.

// historyInputs tells whether the inputs are history exports (then it
// returns their files, directories expanded) or plain records (nil).
// Every line of every file is looked at: a file that mixes history lines
// with other lines is refused naming the lines, and so are inputs that
// mix history files with files of records (each import is one
// transaction of one kind).
func historyInputs(inputs []importInput) ([]importInput, error) {
	var histFile, plainFile string
	var files []importInput
	for _, in := range inputs {
		list := []importInput{in}
		if in.name == in.path {
			paths, err := importer.ListFiles(in.path)
			if err != nil {
				return nil, err
			}
			list = list[:0]
			for _, p := range paths {
				list = append(list, importInput{p, p})
			}
		}
		for _, f := range list {
			hist, err := historyFile(f)
			if err != nil {
				return nil, err
			}
			if hist {
				histFile = f.name
				files = append(files, f)
			} else {
				plainFile = f.name
			}
			if histFile != "" && plainFile != "" {
				return nil, fmt.Errorf("import: %s holds histories (export --history) and %s records; import them separately", histFile, plainFile)
			}
		}
	}
	return files, nil
}

// historyFile reads one file: true if its lines are history lines, an
// error naming the first line of the other kind if it mixes them.
func historyFile(in importInput) (bool, error) {
	f, err := os.Open(in.path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	histLine, plainLine := 0, 0
	var mixed error
	err = iljson.EachLine(bufio.NewReaderSize(f, 1<<20), func(n int, b []byte) error {
		if isHistoryLine(b) {
			if histLine == 0 {
				histLine = n
			}
		} else if plainLine == 0 {
			plainLine = n
		}
		if histLine > 0 && plainLine > 0 {
			if histLine > plainLine {
				mixed = fmt.Errorf("import: %s line %d is an incident with its history (export --history), line %d is not: a file holds histories or records, not both", in.name, histLine, plainLine)
			} else {
				mixed = fmt.Errorf("import: %s line %d is not an incident with its history, line %d is (export --history): a file holds histories or records, not both", in.name, plainLine, histLine)
			}
			return mixed
		}
		return nil
	})
	switch {
	case mixed != nil:
		return false, mixed
	case err != nil && histLine == 0:
		// A file that is not lines of text (or has longer lines than a
		// history line may be) is for the record importers to read.
		return false, nil
	case err != nil:
		return false, fmt.Errorf("import: %s: %w", in.name, err)
	}
	return histLine > 0, nil
}

// isHistoryLine: a JSON object on one line with a member "history" at its
// top (incidentlib.IsHistoryLine; a record may not carry one).
func isHistoryLine(b []byte) bool { return incidentlib.IsHistoryLine(b) }

// historyReader is the inputs one after another, each ending its line.
func historyReader(inputs []importInput) (io.Reader, func(), error) {
	var rs []io.Reader
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, in := range inputs {
		f, err := os.Open(in.path)
		if err != nil {
			closeAll()
			return nil, func() {}, err
		}
		files = append(files, f)
		rs = append(rs, bufio.NewReaderSize(f, 1<<20), bytes.NewReader([]byte("\n")))
	}
	return io.MultiReader(rs...), closeAll, nil
}

// importHistoryLocal writes the histories into db, in one transaction.
func importHistoryLocal(ctx context.Context, db *storage.DB, inputs []importInput, stdout io.Writer) error {
	r, done, err := historyReader(inputs)
	if err != nil {
		return err
	}
	defer done()
	// The program's own writes are by the administrator at the console.
	n, err := db.Versions().ImportHistory(incidentlib.WithIdentity(ctx, incidentlib.BootstrapAdmin), r)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "imported the history of %d incidents, every version as given\n", n)
	return nil
}

const importHistoryMutation = `mutation ImportHistory($histories: [HistoryImportInput!]!) {
  importIncidents(histories: $histories) { created userErrors { field message code } }
}`

// importHistoryRemote sends the histories to the server in one request
// (importIncidents(histories), admin only), all or nothing.
func importHistoryRemote(ctx context.Context, rf remoteFlags, inputs []importInput, stdout, stderr io.Writer) error {
	r, done, err := historyReader(inputs)
	if err != nil {
		return err
	}
	defer done()
	var hs []*model.HistoryImportInput
	if err := iljson.EachLine(r, func(n int, b []byte) error {
		h, err := model.HistoryInputOf(b)
		if err != nil {
			return fmt.Errorf("import: history line %d: %w", n, err)
		}
		hs = append(hs, h)
		return nil
	}); err != nil {
		return err
	}
	rem, err := rf.dial()
	if err != nil {
		return err
	}
	defer rem.close()
	var out struct {
		ImportIncidents struct {
			Created    int
			UserErrors []struct {
				Field   []string
				Message string
				Code    string
			}
		} `json:"importIncidents"`
	}
	if err := rem.graphql(ctx, importHistoryMutation, map[string]any{"histories": hs}, &out); err != nil {
		return err
	}
	if ues := out.ImportIncidents.UserErrors; len(ues) > 0 {
		problems := make([]string, len(ues))
		for i, e := range ues {
			problems[i] = e.Code + ": " + e.Message
		}
		return reportProblems(stderr, problems)
	}
	fmt.Fprintf(stdout, "imported the history of %d incidents into %s, every version as given\n", out.ImportIncidents.Created, rem.base)
	return nil
}
