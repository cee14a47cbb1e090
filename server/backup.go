package server

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// DefaultBackupTimeout is how long sending one backup may take.
const DefaultBackupTimeout = time.Hour

// serveBackup answers GET /admin/backup (admin token required) with a
// consistent copy of the whole store, taken in one read transaction
// (bbolt's Tx.WriteTo) while writers go on.
//
// The copy is first written to a temporary file next to the store and then
// sent from there: a read transaction is never held while a slow client
// reads, since a writer that must grow bbolt's memory map waits for every
// open read transaction to end, and the readers that come after it wait
// for that writer. One backup runs at a time; the file is removed when the
// response is done.
func (s *Server) serveBackup(w http.ResponseWriter, r *http.Request) {
	if !s.requireAdmin(w, r, "backups") {
		return
	}
	select {
	case s.backups <- struct{}{}:
		defer func() { <-s.backups }()
	case <-r.Context().Done():
		return
	}
	dir := s.cfg.BackupDir
	if dir == "" {
		dir = filepath.Dir(s.DB.Path())
	}
	f, err := os.CreateTemp(dir, ".incidentlib-backup-*")
	if err != nil {
		s.backupFailed(w, r, "create the temporary file", err)
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, err := s.DB.Backup(r.Context(), f)
	if err != nil {
		s.backupFailed(w, r, "copy the store", err)
		return
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		s.backupFailed(w, r, "rewind the temporary file", err)
		return
	}
	timeout := s.cfg.BackupTimeout
	if timeout <= 0 {
		timeout = DefaultBackupTimeout
	}
	// The server's write timeout is made for GraphQL responses, not for
	// a copy of the whole store.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(timeout))
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	h.Set("Content-Disposition", `attachment; filename="incidentlib.db"`)
	h.Set("Cache-Control", "no-store")
	if _, err := io.Copy(w, f); err != nil {
		s.cfg.Logger.WarnContext(r.Context(), "backup not sent whole", "err", err, "bytes", n)
		return
	}
	s.cfg.Logger.InfoContext(r.Context(), "backup sent", "bytes", n)
}

func (s *Server) backupFailed(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.cfg.Logger.ErrorContext(r.Context(), "backup failed", "step", what, "err", err)
	http.Error(w, "internal error: the backup failed", http.StatusInternalServerError)
}
