package testutil

import (
	"context"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/storage"
)

// serverStore adapts *storage.DB to the root interfaces whose storage
// names have not caught up yet: the change log's one Change type and
// StoreStats. It goes when storage implements incidentlib.ChangeLog and
// incidentlib.StoreMonitor itself (the same shim is in cmd/incidentlib
// and cmd/incidentlib-bench).
type serverStore struct{ *storage.DB }

func (s serverStore) ChangesSince(ctx context.Context, seq uint64, limit int) ([]incidentlib.Change, error) {
	cs, err := s.DB.ChangesSince(ctx, seq, limit)
	out := make([]incidentlib.Change, len(cs))
	for i, c := range cs {
		out[i] = incidentlib.Change{Seq: c.Seq, ID: c.ID, Deleted: c.Deleted, Incident: c.Incident}
	}
	return out, err
}

func (s serverStore) RawChangesSince(ctx context.Context, seq uint64, limit int) ([]incidentlib.Change, error) {
	cs, err := s.DB.RawChangesSince(ctx, seq, limit)
	out := make([]incidentlib.Change, len(cs))
	for i, c := range cs {
		out[i] = incidentlib.Change{Seq: c.Seq, ID: c.ID, Deleted: c.Deleted, Record: c.Record}
	}
	return out, err
}

func (s serverStore) StoreStats() incidentlib.StoreStats {
	st := s.DB.Stats()
	return incidentlib.StoreStats{
		ReadTxTotal: st.TxN, OpenReadTx: st.OpenTxN, FreePages: st.FreePageN, PendingPages: st.PendingPageN,
		FreeAllocBytes: st.FreeAlloc, FreelistBytes: st.FreelistInuse, FileBytes: st.FileBytes, PageBytes: st.PageSize,
		Seq: st.Seq, WritesInFlight: s.DB.WritesInFlight(),
	}
}
