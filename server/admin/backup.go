package admin

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/incidentlib/incidentlib"
)

// DefaultBackupTimeout is how long sending one backup may take.
const DefaultBackupTimeout = time.Hour

// Backups serve copies of the store.
type Backups struct {
	auth    *Auth
	store   incidentlib.Backuper
	dir     string
	timeout time.Duration
	logger  *slog.Logger
	running chan struct{} // one backup at a time
}

// NewBackups serves copies of store to requests with the admin token
// (auth). Each copy is written to a temporary file in dir first (default
// os.TempDir(); serve passes the store's directory) and may take timeout
// to send (default DefaultBackupTimeout).
func NewBackups(auth *Auth, store incidentlib.Backuper, dir string, timeout time.Duration, logger *slog.Logger) *Backups {
	if dir == "" {
		dir = os.TempDir()
	}
	if timeout <= 0 {
		timeout = DefaultBackupTimeout
	}
	return &Backups{auth: auth, store: store, dir: dir, timeout: timeout, logger: logger, running: make(chan struct{}, 1)}
}

// ServeHTTP answers GET /admin/backup (admin token required) with a
// consistent copy of the whole store, taken in one read transaction
// (bbolt's Tx.WriteTo; after a purge, a compacted copy without the file's
// free pages) while writers go on.
//
// The copy is first written to a temporary file next to the store and then
// sent from there: a read transaction is never held while a slow client
// reads, since a writer that must grow bbolt's memory map waits for every
// open read transaction to end, and the readers that come after it wait
// for that writer. One backup runs at a time; the file is removed when the
// response is done.
func (s *Backups) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.auth.Require(w, r, incidentlib.RoleAdmin, "a backup") {
		return
	}
	select {
	case s.running <- struct{}{}:
		defer func() { <-s.running }()
	case <-r.Context().Done():
		return
	}
	f, err := os.CreateTemp(s.dir, ".incidentlib-backup-*")
	if err != nil {
		s.backupFailed(w, r, "create the temporary file", err)
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, err := s.store.Backup(r.Context(), f)
	if err != nil {
		s.backupFailed(w, r, "copy the store", err)
		return
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		s.backupFailed(w, r, "rewind the temporary file", err)
		return
	}
	// The server's write timeout is made for GraphQL responses, not for
	// a copy of the whole store.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.timeout))
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	h.Set("Content-Disposition", `attachment; filename="incidentlib.db"`)
	h.Set("Cache-Control", "no-store")
	if _, err := io.Copy(w, f); err != nil {
		s.logger.WarnContext(r.Context(), "backup not sent whole", "err", err, "bytes", n)
		return
	}
	s.logger.InfoContext(r.Context(), "backup sent", "bytes", n)
}

func (s *Backups) backupFailed(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.logger.ErrorContext(r.Context(), "backup failed", "step", what, "err", err)
	http.Error(w, "internal error: the backup failed", http.StatusInternalServerError)
}
