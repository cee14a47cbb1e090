package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// The history's read side: the pages of versions, one version, a deleted
// incident's last record.

// History returns one page of the history of id, newest first; see
// incidentlib.HistoryService.
func (st Versions) History(ctx context.Context, id string, first, after int) (*incidentlib.VersionPage, error) {
	n, err := parseIncidentID(id)
	if err != nil {
		return nil, err
	}
	if first < 0 || first > incidentlib.MaxPageSize {
		return nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"first"}, "first must be between 0 and %d, got %d", incidentlib.MaxPageSize, first)
	}
	page := &incidentlib.VersionPage{Versions: []*incidentlib.IncidentVersion{}}
	if st.db.noHistory {
		return page, nil
	}
	err = st.db.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketHistory).Cursor()
		prefix := u32key(n)
		var keys [][]byte
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		page.TotalCount = len(keys)
		if len(keys) == 0 {
			return incidentlib.FieldErrorf(incidentlib.ENOTFOUND, []string{"id"}, "incident %s has no history", id)
		}
		slices.Reverse(keys)
		for _, k := range keys {
			v := int(binary.BigEndian.Uint32(k[4:]))
			if after > 0 && v >= after {
				continue
			}
			if len(page.Versions) == first {
				page.HasNextPage = true
				break
			}
			e, err := decodeEntry(k, tx.Bucket(bucketHistory).Get(k))
			if err != nil {
				return err
			}
			page.Versions = append(page.Versions, e.version(id, v, versionRecord(tx, n, v)))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// IncidentVersion returns one version of id; see
// incidentlib.HistoryService.
func (st Versions) IncidentVersion(ctx context.Context, id string, version int) (*incidentlib.IncidentVersion, error) {
	n, err := parseIncidentID(id)
	if err != nil {
		return nil, err
	}
	var out *incidentlib.IncidentVersion
	if st.db.noHistory {
		return nil, nil
	}
	err = st.db.view(ctx, func(tx *bolt.Tx) error {
		k := histKey(n, version)
		v := tx.Bucket(bucketHistory).Get(k)
		if v == nil || version < 1 {
			return nil
		}
		e, err := decodeEntry(k, v)
		if err != nil {
			return err
		}
		out = e.version(id, version, versionRecord(tx, n, version))
		return nil
	})
	return out, err
}

// DeletedIncident returns the last record of a deleted incident and its
// tombstone; see incidentlib.HistoryService.
func (st Versions) DeletedIncident(ctx context.Context, id string) (*incidentlib.Incident, *incidentlib.IncidentVersion, error) {
	n, err := parseIncidentID(id)
	if err != nil {
		return nil, nil, err
	}
	var inc *incidentlib.Incident
	var tomb *incidentlib.IncidentVersion
	if st.db.noHistory {
		return nil, nil, nil
	}
	err = st.db.view(ctx, func(tx *bolt.Tx) error {
		v, e, err := lastEntry(tx, n)
		if err != nil || e == nil || !e.Deleted {
			return err
		}
		tomb = e.version(id, v, nil)
		// The last record before the delete (purged: none).
		if r := tx.Bucket(bucketVersions).Get(u64key(e.Seq)); r != nil {
			rec, err := coldDecode(r)
			if err != nil {
				return err
			}
			inc = new(incidentlib.Incident)
			return json.Unmarshal(rec, inc)
		}
		inc = &incidentlib.Incident{ID: id}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return inc, tomb, nil
}
