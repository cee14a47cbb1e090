package storage

import (
	"encoding/binary"
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// checkHistoryGrammar holds every stored history to the history grammar
// (validateHistory), the one that history import holds an
// imported history to: a store written before the rules, or changed
// underneath, is reported by check, with the allowances the store's own
// past gives (storeHistoryAllowances).
func checkHistoryGrammar(tx *bolt.Tx, add func(string, ...any)) {
	allow := storeHistoryAllowances(tx)
	var cur []incidentlib.IncidentVersion
	var curN uint32
	flush := func() {
		if len(cur) == 0 {
			return
		}
		for _, e := range validateHistory(cur[0].ID, cur, allow) {
			add("history: %s", e.Message)
		}
		cur = cur[:0]
	}
	_ = tx.Bucket(bucketHistory).ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return nil // checkHistory reports it
		}
		n, ver := binary.BigEndian.Uint32(k), int(binary.BigEndian.Uint32(k[4:]))
		if len(cur) > 0 && n != curN {
			flush()
		}
		curN = n
		e, err := decodeEntry(k, v)
		if err != nil {
			return nil // checkHistory reports it
		}
		var rec []byte
		if !e.Deleted {
			rec = versionRecord(tx, n, ver)
		}
		id := incidentlib.FormatID(n)
		cur = append(cur, incidentlib.IncidentVersion{ID: id, Version: ver, At: e.At, Author: e.Author, AuthorRole: e.Role,
			Action: e.Action, ChangedFields: e.Changed, Comment: e.Comment, Record: rec, Deleted: e.Deleted, Target: e.Target})
		return nil
	})
	flush()
}

// metaHistoryAllowances holds the allowances of the histories imported
// into the store (JSON of incidentlib.HistoryAllowances).
var metaHistoryAllowances = []byte("history_allowances")

// allowHistory adds a to the allowances the store records.
func allowHistory(tx *bolt.Tx, a incidentlib.HistoryAllowances) error {
	if a == (incidentlib.HistoryAllowances{}) {
		return nil
	}
	had := storeHistoryAllowances(tx)
	a.Gaps, a.Unordered = a.Gaps || had.Gaps, a.Unordered || had.Unordered
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(metaHistoryAllowances, b)
}

// storeHistoryAllowances is what the store's histories may do: gaps after
// a history compact; gaps and times out of order in a store that follows
// a primary's log (which keeps only each incident's latest change) or is
// a cluster node's (stamped by the nodes' clocks); and what imported
// histories needed (allowHistory).
func storeHistoryAllowances(tx *bolt.Tx) incidentlib.HistoryAllowances {
	meta := tx.Bucket(bucketMeta)
	var a incidentlib.HistoryAllowances
	if b := meta.Get(metaHistoryAllowances); b != nil {
		_ = json.Unmarshal(b, &a)
	}
	if getU64(meta.Get(metaHistoryCompacted)) > 0 {
		a.Gaps = true
	}
	if meta.Get(metaFollowSeq) != nil || meta.Get(metaLogSeq) != nil {
		a.Gaps, a.Unordered = true, true
	}
	return a
}
