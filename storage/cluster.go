package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"
	"strings"
	"time"
	"unicode"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// A cluster node's store (incidentlib.LogApplier): every write comes from
// the cluster's replicated log and is run under incidentlib.WithLogPosition,
// which stamps the time the receiving node chose and stores the log's
// sequence in the write's own transaction. The position is written whether
// the write changed the store, changed nothing or was refused by a check of
// the stored state, so that a node that stops at any moment resumes right
// after the last write it applied, and every node records the same.

var (
	// metaLogSeq holds the log position the store applied up to (u64).
	// Only a cluster node's store has it.
	metaLogSeq = []byte("log_seq")
	// bucketLogRejects holds the log's writes the store refused: the
	// sequence (u64) to "CODE message". Created by the first refusal.
	bucketLogRejects = []byte("log_rejects")
)

// startLogged begins the write of a log message when ctx carries a log
// position: the write stamps the message's time, and a position at or
// below the stored one is refused (ECONFLICT: applied already). It
// returns nil for a write that is not a log's. A cluster node's store
// (one that holds a log position) refuses a write without one: it went
// around the cluster's log (refuseUnlogged).
func (w *writeTx) startLogged(ctx context.Context) (*incidentlib.LogPosition, error) {
	p, ok := incidentlib.LogPositionFrom(ctx)
	if !ok {
		if w.tx.Bucket(bucketMeta).Get(metaLogSeq) != nil {
			return nil, w.db.refuseUnlogged(string(w.action))
		}
		return nil, nil
	}
	if cur := getU64(w.tx.Bucket(bucketMeta).Get(metaLogSeq)); p.Seq <= cur {
		return nil, incidentlib.Errorf(incidentlib.ECONFLICT, "the store has applied the log up to %d: write %d is applied already", cur, p.Seq)
	}
	w.now = p.At.UTC().Format(time.RFC3339Nano)
	return &p, nil
}

// endLogged stores the log position p (nil: not a log's write) and the
// refusal of the write, if any.
func (w *writeTx) endLogged(p *incidentlib.LogPosition, refused error) error {
	if p == nil {
		return nil
	}
	return putLogged(w.tx, p.Seq, refused)
}

func putLogged(tx *bolt.Tx, seq uint64, refused error) error {
	if err := tx.Bucket(bucketMeta).Put(metaLogSeq, u64key(seq)); err != nil {
		return err
	}
	if refused == nil {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bucketLogRejects)
	if err != nil {
		return err
	}
	return b.Put(u64key(seq), []byte(incidentlib.ErrorCode(refused)+" "+incidentlib.ErrorMessage(refused)))
}

// LogSeq returns the log position the store applied up to, and whether
// the store is a cluster node's; see incidentlib.LogApplier.
func (st ClusterLog) LogSeq(ctx context.Context) (seq uint64, logged bool, err error) {
	return st.db.metaPosition(ctx, metaLogSeq)
}

// SkipLogged stores seq as the log position, with the refusal of the
// write at seq; see incidentlib.LogApplier.
func (st ClusterLog) SkipLogged(ctx context.Context, seq uint64, rejected error) error {
	if err := st.db.refuseWrite(); err != nil {
		return err
	}
	if err := st.db.outsideGroup(ctx); err != nil { // loggroup.go
		return err
	}
	err := st.db.updateGuarded(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(metaLogSeq); v != nil && seq <= getU64(v) {
			cur := getU64(v)
			return incidentlib.Errorf(incidentlib.ECONFLICT, "the store has applied the log up to %d: write %d is applied already", cur, seq)
		}
		return putLogged(tx, seq, rejected)
	})
	return st.db.writeError(err)
}

// MarkLogged makes the store a cluster node's at log position 0 (a new
// node before its first write), so that offline writers refuse it.
func (st ClusterLog) MarkLogged(ctx context.Context) error {
	_, logged, err := st.LogSeq(ctx)
	if err != nil || logged {
		return err
	}
	return st.SkipLogged(ctx, 0, nil)
}

// metaLibrary names the library a cluster began from: a random id that
// `cluster init` stores in the library it makes a node's store. It goes
// with the store into every snapshot and every node started from one, and
// the snapshots carry it, so a node tells a snapshot of its own library
// from another library's.
var metaLibrary = []byte("cluster_library")

// InitClusterLibrary makes the store a cluster node's at log position 0
// (MarkLogged) and names its library with a new random id, which it
// returns; a store that has one keeps it.
func (st ClusterLog) InitClusterLibrary(ctx context.Context) (string, error) {
	if err := st.MarkLogged(ctx); err != nil {
		return "", err
	}
	if id, err := st.ClusterLibrary(ctx); err != nil || id != "" {
		return id, err
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw[:])
	err := st.db.updateGuarded(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(metaLibrary, []byte(id)) })
	if err := st.db.writeError(err); err != nil {
		return "", err
	}
	return id, nil
}

// ClusterLibrary returns the store's library id (InitClusterLibrary), ""
// when it has none.
func (st ClusterLog) ClusterLibrary(ctx context.Context) (string, error) {
	v, err := st.db.metaValue(ctx, metaLibrary)
	return string(v), err
}

// Rejections returns the log's writes the store refused; see
// incidentlib.LogApplier.
func (st ClusterLog) Rejections(ctx context.Context) ([]incidentlib.LogRejection, error) {
	var out []incidentlib.LogRejection
	err := st.db.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLogRejects)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			code, msg, _ := cutSpace(string(v))
			out = append(out, incidentlib.LogRejection{Seq: getU64(k), Code: code, Message: msg})
			return nil
		})
	})
	return out, err
}

func cutSpace(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// RefuseIfLogged refuses an offline write to a cluster node's store: its
// writes come from the cluster's log only.
func (st ClusterLog) RefuseIfLogged(ctx context.Context, what string) error {
	seq, logged, err := st.LogSeq(ctx)
	if err != nil || !logged {
		return err
	}
	return fmt.Errorf("%s: %s is a cluster node's store (log position %d): write through a running node with --server", what, st.db.Path(), seq)
}

// The one rule of a cluster node's store: every write of the library's
// data carries a log position (incidentlib.WithLogPosition), given by the
// cluster's Applier, which applies the same write on every node. A write
// without one went around the log (a path that reached the store instead
// of the cluster's writer) and would make this node differ from the
// others for good: it is refused with an internal error naming the
// method, and logged. Every write of the library's data goes through
// startLogged, and the batched import through checkUnlogged. The
// node-local bookkeeping is not the library's data and is written
// without a position: a token's time of last use (flushTokenUse), the
// built-in terms written at open, the log position itself and the
// cluster's library id (SkipLogged, MarkLogged, InitClusterLibrary); the
// search index is a file of its own (docs/cluster.md).

// refuseUnlogged is the error of a write without a log position to a
// cluster node's store; action is the write's history action, named when
// the method cannot be found on the stack (a write run in a batch).
func (db *DB) refuseUnlogged(action string) error {
	method := writeMethod()
	if method == "" {
		method = "a write"
		if action != "" {
			method += " (" + action + ")"
		}
	}
	err := fmt.Errorf("storage: %s without a log position on a cluster node's store %s: every write of a cluster node goes through the cluster's log; nothing was written", method, db.path)
	db.fault.logger.Error("a write went around the cluster's log and was refused", "method", method, "file", db.path)
	return err
}

// checkUnlogged refuses, in tx, a write without a log position (ctx) to a
// cluster node's store; see refuseUnlogged.
func (db *DB) checkUnlogged(ctx context.Context, tx *bolt.Tx) error {
	if _, ok := incidentlib.LogPositionFrom(ctx); ok || tx.Bucket(bucketMeta).Get(metaLogSeq) == nil {
		return nil
	}
	return db.refuseUnlogged("")
}

// writeMethod returns the name of the outermost exported method of the
// store on the stack ("DB.UpsertIncident", "BatchedImport.Write"), "" when
// there is none. A method of a room, or of a value that forwards to the
// rooms, is named as the store's (DB.), as it was before the rooms: the
// refusal's message and log line stay the same.
func writeMethod() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	const prefix = "github.com/incidentlib/incidentlib/storage."
	found := ""
	for {
		f, more := frames.Next()
		if rest, ok := strings.CutPrefix(f.Function, prefix); ok {
			var typ, method string
			if ptr, ok := strings.CutPrefix(rest, "(*"); ok {
				typ, method, _ = strings.Cut(ptr, ").")
			} else if typ, method, _ = strings.Cut(rest, "."); storeValues[typ] {
				typ = "DB"
			} else {
				method = ""
			}
			method, _, _ = strings.Cut(method, ".")
			if method != "" && unicode.IsUpper(rune(method[0])) {
				found = typ + "." + method
			}
		}
		if !more {
			return found
		}
	}
}
