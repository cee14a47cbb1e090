package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/incidentlib/incidentlib"
)

// storeCollector reads the store's figures at scrape time. StoreStats
// takes no transaction, so a scrape never waits on the store's writers
// (seed 000: monitoring must not depend on the thing that failed).
type storeCollector struct {
	mon                                            incidentlib.StoreMonitor
	readTx, openTx, free, pending, freeAlloc, used *prometheus.Desc
	fileBytes, seq, pageSize, writesInFlight       *prometheus.Desc
	corrupt, fullErrors                            *prometheus.Desc
}

func newStoreCollector(mon incidentlib.StoreMonitor) *storeCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &storeCollector{
		mon:       mon,
		readTx:    d("incidentlib_bbolt_read_tx_total", "Read transactions started (bbolt Stats().TxN)."),
		openTx:    d("incidentlib_bbolt_open_read_tx", "Read transactions open now."),
		free:      d("incidentlib_bbolt_free_pages", "Free pages on the freelist."),
		pending:   d("incidentlib_bbolt_pending_pages", "Pages freed but still held by open read transactions."),
		freeAlloc: d("incidentlib_bbolt_free_alloc_bytes", "Bytes allocated in free pages."),
		used:      d("incidentlib_bbolt_freelist_bytes", "Bytes the freelist takes in use (bbolt FreelistInuse)."),
		fileBytes: d("incidentlib_bbolt_file_bytes", "Size of the database file."),
		seq:       d("incidentlib_store_sequence", "The store's change sequence."),
		pageSize:  d("incidentlib_bbolt_page_bytes", "The database page size."),
		writesInFlight: d("incidentlib_store_writes_in_flight",
			"Mutations waiting for or running their write transaction (more than one share a commit through bbolt's Batch)."),
		corrupt: d("incidentlib_store_corrupt",
			"1 once a transaction met a damaged page of the store file (STORE_CORRUPT; restore from a backup), else 0."),
		fullErrors: d("incidentlib_store_full_errors_total",
			"Writes refused because the disk was full (STORAGE_FULL: ENOSPC, EFBIG or EDQUOT); nothing of them was written."),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.readTx, c.openTx, c.free, c.pending, c.freeAlloc, c.used, c.fileBytes, c.seq, c.pageSize, c.writesInFlight, c.corrupt, c.fullErrors} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.mon.StoreStats()
	ch <- prometheus.MustNewConstMetric(c.readTx, prometheus.CounterValue, float64(s.ReadTxTotal))
	ch <- prometheus.MustNewConstMetric(c.openTx, prometheus.GaugeValue, float64(s.OpenReadTx))
	ch <- prometheus.MustNewConstMetric(c.free, prometheus.GaugeValue, float64(s.FreePages))
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(s.PendingPages))
	ch <- prometheus.MustNewConstMetric(c.freeAlloc, prometheus.GaugeValue, float64(s.FreeAllocBytes))
	ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(s.FreelistBytes))
	ch <- prometheus.MustNewConstMetric(c.fileBytes, prometheus.GaugeValue, float64(s.FileBytes))
	ch <- prometheus.MustNewConstMetric(c.seq, prometheus.GaugeValue, float64(s.Seq))
	ch <- prometheus.MustNewConstMetric(c.pageSize, prometheus.GaugeValue, float64(s.PageBytes))
	ch <- prometheus.MustNewConstMetric(c.writesInFlight, prometheus.GaugeValue, float64(s.WritesInFlight))
	corrupt := 0.0
	if s.Corrupt {
		corrupt = 1
	}
	ch <- prometheus.MustNewConstMetric(c.corrupt, prometheus.GaugeValue, corrupt)
	ch <- prometheus.MustNewConstMetric(c.fullErrors, prometheus.CounterValue, float64(s.FullErrors))
}
