package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The index's directory is locked and tied to its store.
//
// Lock: the file "lock" in the directory, held with flock for as long as an
// Index (or a Rebuild) has the directory open. A second process pointed at
// the same directory is refused with ErrLocked, naming the directory and
// the holder (whose pid and store the lock file says): an index directory
// has one writer. Refusing, rather than serving the second index from
// memory only, makes the misconfiguration visible at start-up, and either
// way nothing is overwritten.
//
// Identity: the file "store.json" records the store the index was made
// from (its StoreID, random and written once into the store, given as
// Options.StoreID, and its path). An index whose record names another store is rebuilt from the
// store at open (ErrRebuild), never shared.

const (
	lockFile     = "lock"
	identityFile = "store.json"
)

// ErrLocked is returned by Open and Rebuild when another process holds the
// index's directory.
var ErrLocked = errors.New("the search index directory is in use by another process")

// dirLock is the held lock of an index directory.
type dirLock struct{ f *os.File }

// lockDir creates dir if needed and takes its lock, writing the holder
// into the lock file for whoever is refused next.
func lockDir(dir string, db Store) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the search index %s: %w", dir, err)
	}
	name := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the search index lock %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(name)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			h := strings.TrimSpace(string(holder))
			if h == "" {
				h = "another process"
			}
			return nil, fmt.Errorf("%w: %s is held by %s; give each server its own --search-index", ErrLocked, dir, h)
		}
		return nil, fmt.Errorf("lock the search index %s: %w", dir, err)
	}
	// Who holds it; best effort (a full disk must not stop the index).
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d serving the store %s\n", os.Getpid(), absPath(db.Path()))), 0)
	}
	return &dirLock{f: f}, nil
}

// release gives the lock up.
func (l *dirLock) release() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// identity is the store an index was made from.
type identity struct {
	StoreID   string `json:"store_id"`
	StorePath string `json:"store_path"`
}

func identityOf(db interface{ Path() string }, opts Options) identity {
	return identity{StoreID: opts.StoreID, StorePath: absPath(db.Path())}
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// readIdentity reads the identity recorded in dir; ok is false when there
// is none (a new directory, or an index of an older version).
func readIdentity(dir string) (id identity, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, identityFile))
	if errors.Is(err, os.ErrNotExist) {
		return identity{}, false, nil
	}
	if err != nil {
		return identity{}, false, err
	}
	if err := json.Unmarshal(b, &id); err != nil {
		return identity{}, false, nil // unreadable: as if none, and rewritten at the next save
	}
	return id, true, nil
}

// otherStore says why the identity recorded in dir is not want, or "".
func otherStore(dir string, want identity) (string, error) {
	rec, ok, err := readIdentity(dir)
	if err != nil || !ok {
		return "", err
	}
	switch {
	case rec.StoreID != "" && want.StoreID != "" && rec.StoreID != want.StoreID:
		return fmt.Sprintf("%s was made from another store (id %s at %s), not %s (id %s)", dir, rec.StoreID, rec.StorePath, want.StorePath, want.StoreID), nil
	case rec.StorePath != want.StorePath:
		return fmt.Sprintf("%s was made from the store at %s, not %s", dir, rec.StorePath, want.StorePath), nil
	}
	return "", nil
}

// writeIdentity records id as the store of the index in dir: aside, then
// renamed.
func writeIdentity(dir string, id identity) error {
	b, err := json.Marshal(id)
	if err != nil {
		return err
	}
	name := filepath.Join(dir, identityFile)
	if err := os.WriteFile(name+".tmp", append(b, '\n'), 0o644); err != nil {
		os.Remove(name + ".tmp")
		return err
	}
	return os.Rename(name+".tmp", name)
}
