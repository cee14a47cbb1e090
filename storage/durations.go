package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// The index of durations: for each timeline duration (detected_after,
// resolved_after) and each value it takes, in whole seconds, a posting of
// the incidents that state it. The postings live beside the others in the
// postings bucket (postingsOf lists them), so that every write keeps them
// in its transaction as it keeps the rest, batched imports write them
// once per batch of batches, and check verifies them. Their names sort
// by value: a scan in key order walks the values from the smallest.

const (
	prefixDuration = "d\x00"
	durDetected    = "detected"
	durResolved    = "resolved"
)

// postDuration is the posting of the incidents whose duration which is
// secs seconds.
func postDuration(which string, secs int64) string {
	return prefixDuration + which + "\x00" + fmt.Sprintf("%012d", secs)
}

// durationPostings lists the duration postings inc belongs to.
func durationPostings(inc *incidentlib.Incident) []string {
	var out []string
	for _, d := range [...]struct{ which, value string }{{durDetected, inc.Timeline.DetectedAfter}, {durResolved, inc.Timeline.ResolvedAfter}} {
		if secs, ok := durationSeconds(d.value); ok {
			out = append(out, postDuration(d.which, secs))
		}
	}
	return out
}

// durationSeconds is a timeline duration in whole seconds, as the
// GraphQL fields detectedAfterSeconds and resolvedAfterSeconds give it.
func durationSeconds(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	d, err := incidentlib.ParseDuration(s)
	if err != nil || d < 0 || d/time.Second > 999_999_999_999 {
		return 0, false
	}
	return int64(d / time.Second), true
}

// metaDurations marks a store whose duration postings are written: a
// store made before them gets them at its first writable open.
var metaDurations = []byte("durations_index")

// indexDurationsOnce writes the duration postings of every stored record
// if the store has never had them (a store written before the index).
// The records are read once, for their timeline alone.
func indexDurationsOnce(tx *bolt.Tx) error {
	return indexOnce(tx, metaDurations, func(v []byte) []string {
		var rec struct {
			Timeline struct {
				DetectedAfter any `json:"detected_after"`
				ResolvedAfter any `json:"resolved_after"`
			} `json:"timeline"`
		}
		if json.Unmarshal(v, &rec) != nil {
			return nil // check reports the record
		}
		str := func(x any) string { s, _ := x.(string); return s }
		return durationPostings(&incidentlib.Incident{Timeline: incidentlib.Timeline{DetectedAfter: str(rec.Timeline.DetectedAfter), ResolvedAfter: str(rec.Timeline.ResolvedAfter)}})
	})
}

// indexOnce writes, unless the store has marker, the postings that
// postingsOf names for every stored record (given the record's IL-JSON),
// then the marker: an index added to the format, written at the first
// writable open of a store made before it. The records are read once.
func indexOnce(tx *bolt.Tx, marker []byte, postingsOf func(rec []byte) []string) error {
	meta := tx.Bucket(bucketMeta)
	if meta.Get(marker) != nil {
		return nil
	}
	postings := map[string]*roaring.Bitmap{}
	err := tx.Bucket(bucketIncidents).ForEach(func(k, v []byte) error {
		if len(k) != 4 || len(v) < 8 {
			return nil
		}
		for _, p := range postingsOf(v[8:]) {
			if postings[p] == nil {
				postings[p] = roaring.New()
			}
			postings[p].Add(getU32(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	pb := tx.Bucket(bucketPostings)
	for name, bm := range postings {
		if err := putPosting(pb, name, bm); err != nil {
			return err
		}
	}
	return meta.Put(marker, []byte(strconv.Itoa(len(postings))))
}

// durationStatsIn summarises duration which over the incidents of set.
func durationStatsIn(tx *bolt.Tx, set *roaring.Bitmap, which string) (incidentlib.DurationStats, error) {
	type valueCount struct {
		secs  int64
		count uint64
	}
	var vals []valueCount
	var total uint64
	prefix := []byte(prefixDuration + which + "\x00")
	c := tx.Bucket(bucketPostings).Cursor()
	p := roaring.New()
	// Many small postings against one set: its bitset, when it has one,
	// is tested once per incident of each.
	count := set.AndCardinality
	if words, ok := denseWords(set); ok && words > 0 {
		buf := slab(words)
		defer putSlab(buf)
		set.WriteDenseTo(*buf)
		count = func(p *roaring.Bitmap) uint64 { return countIn(*buf, p) }
	}
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		secs, err := strconv.ParseInt(string(k[len(prefix):]), 10, 64)
		if err != nil {
			continue
		}
		if _, err := p.FromBuffer(v); err != nil {
			return incidentlib.DurationStats{}, err
		}
		if n := count(p); n > 0 {
			vals = append(vals, valueCount{secs, n})
			total += n
		}
	}
	out := incidentlib.DurationStats{Count: int(total)}
	if total == 0 {
		return out, nil
	}
	rank := func(q uint64) *int { // nearest rank: ceil(q% of total)
		r := (q*total + 99) / 100
		var cum uint64
		for _, vc := range vals {
			cum += vc.count
			if cum >= r {
				s := int(vc.secs)
				return &s
			}
		}
		return nil
	}
	out.P50, out.P90 = rank(50), rank(90)
	m := int(vals[len(vals)-1].secs)
	out.Max = &m
	return out, nil
}

// withoutPendingDurations leaves the duration postings out of what check
// expects when the store has not had them written yet (a store made
// before the index, opened read-only since), and says so as a warning:
// the next writable open writes them.
func withoutPendingDurations(tx *bolt.Tx, postings map[string]*roaring.Bitmap) []string {
	return withoutPending(tx, metaDurations, []string{prefixDuration}, postings,
		"the index of durations is not written yet: the next writable open of the store writes it")
}

// withoutPending leaves the postings of an index written by indexOnce out
// of what check expects while the store lacks its marker (made before the
// index, opened read-only since), with warning as check's warning.
func withoutPending(tx *bolt.Tx, marker []byte, prefixes []string, postings map[string]*roaring.Bitmap, warning string) []string {
	if tx.Bucket(bucketMeta).Get(marker) != nil {
		return nil
	}
	for name := range postings {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				delete(postings, name)
			}
		}
	}
	return []string{warning}
}
