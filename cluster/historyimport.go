package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/incidentlib/incidentlib"
)

// The import of incidents with their history through the log (rule set
// 3): the receiving node publishes the lines as the client sent them,
// and every node's store writes them as given (incidentlib.HistoryImporter)
// under the message's log position, so that every node holds the same
// history. An import too large for one message goes in chunks, as
// ImportIncidents' records do (publishChunks): each chunk a message that
// writes nothing, the commit naming them.

// historyChunkBytes is the most of an import's lines one chunk carries:
// the message holds them in base64 (4/3 of them), below chunkBytes.
const historyChunkBytes = chunkBytes / 2

// ImportHistory publishes a history import, applied on every node in one
// transaction of its store (all or nothing); see
// incidentlib.HistoryImporter.
func (wr *Writer) ImportHistory(ctx context.Context, r io.Reader) (int, error) {
	lines, err := io.ReadAll(r)
	if err != nil {
		return 0, incidentlib.Errorf(incidentlib.EINVALID, "read the history: %v", err)
	}
	if len(bytes.TrimSpace(lines)) == 0 {
		return 0, nil
	}
	// The checks that need no stored state, before anything is published
	// (the store makes them again at apply, with every other).
	if err := checkHistoryLines(lines); err != nil {
		return 0, err
	}
	// The key is bound to the whole import (a commit names only its
	// chunks' positions), as ImportIncidents binds its records.
	whole := digest(lines)
	w := &Write{Op: OpHistoryImport, History: lines}
	if len(lines) > historyChunkBytes {
		chunks, err := wr.publishHistoryChunks(ctx, lines)
		if err != nil {
			return 0, err
		}
		w.Op, w.History, w.Chunks = OpHistoryCommit, nil, chunks
	}
	res, err := wr.writeBound(ctx, SubjectLibrary, w, whole)
	if err != nil {
		return 0, err
	}
	if res.Err != nil {
		return 0, res.Err
	}
	if res.Imported == nil {
		return 0, nil
	}
	return res.Imported.Created, nil
}

// checkHistoryLines refuses (EINVALID, naming the line) a line that is no
// incident id with a history, as the store would at apply.
func checkHistoryLines(lines []byte) error {
	for n, line := range bytes.Split(lines, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var l struct {
			ID      string            `json:"id"`
			History []json.RawMessage `json:"history"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return incidentlib.Errorf(incidentlib.EINVALID, "line %d: %v", n+1, err)
		}
		if _, ok := incidentlib.ParseID(l.ID); !ok || len(l.History) == 0 {
			return incidentlib.Errorf(incidentlib.EINVALID, "line %d: no incident id or no history", n+1)
		}
	}
	return nil
}

// publishHistoryChunks publishes the lines of an import too large for one
// message in chunks of historyChunkBytes, each its own message, and
// returns their log positions for the commit. Chunks without a commit are
// never applied.
func (wr *Writer) publishHistoryChunks(ctx context.Context, lines []byte) ([]uint64, error) {
	var seqs []uint64
	hdr := header(OpHistoryChunk)
	key := idempotencyKeyOf(ctx)
	for len(lines) > 0 {
		part := lines[:min(len(lines), historyChunkBytes)]
		lines = lines[len(part):]
		data, err := (&Write{Op: OpHistoryChunk, History: part}).encode()
		if err != nil {
			return nil, err
		}
		seq, _, err := wr.node.Publish(ctx, SubjectLibrary, fmt.Sprintf("%s:%d", key, len(seqs)), nil, hdr, data)
		if err != nil {
			return nil, err
		}
		seqs = append(seqs, seq)
	}
	return seqs, nil
}

// applyHistory applies a history import w at seq to the store (wctx
// carries its log position), its answer in res; false when w is no
// history import's.
func (a *Applier) applyHistory(ctx, wctx context.Context, seq uint64, w *Write, res *Result) bool {
	var lines []byte
	switch w.Op {
	case OpHistoryImport:
		lines = w.History
	case OpHistoryChunk:
		return true // applied with its commit: the position passes it
	case OpHistoryCommit:
		if lines, res.Err = a.historyChunks(ctx, seq, w.Chunks); res.Err != nil {
			return true
		}
	default:
		return false
	}
	n, err := a.store.ImportHistory(wctx, bytes.NewReader(lines))
	if err != nil {
		res.Err = err
		return true
	}
	res.Imported = &incidentlib.ImportResult{Created: n}
	return true
}

// historyChunks reads a history import's chunks back from the log, in
// order, and joins their bytes: each must be a history chunk before the
// commit at seq.
func (a *Applier) historyChunks(ctx context.Context, seq uint64, seqs []uint64) ([]byte, error) {
	var lines []byte
	err := a.eachChunk(ctx, seq, seqs, OpHistoryChunk, "history", func(w *Write) { lines = append(lines, w.History...) })
	return lines, err
}
