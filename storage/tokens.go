package storage

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/incidentlib/incidentlib"
)

// API tokens (incidentlib.TokenService). The tokens bucket holds one
// record per name: the SHA-256 of the token, never the token. Token writes
// do not advance the store's change sequence: they are no change to the
// library's records, so they are neither in the change feed nor a reason
// to drop cached responses, and a store that holds only tokens is still a
// new, empty store for the seeds (ImportOptions.OnlyIfNew).
//
// Every token is also kept in memory (db.tokens), loaded at open and
// changed with each token write, so that authenticating a request reads
// nothing from the file. "Last used" is kept in memory and saved by
// flushTokenUse at most once a minute (tokenUseFlushEvery) and at close:
// a request never writes.

// Tokens is the store's room of the API tokens. DB.Tokens returns it.
type Tokens struct {
	db *DB
}

var (
	_ incidentlib.TokenService = Tokens{}
	_ incidentlib.TokenIssuer  = Tokens{}
	_ incidentlib.TokenReader  = Tokens{}
	_ incidentlib.TokenWriter  = Tokens{}
)

// tokenUseFlushEvery is how often the times of use are saved at most.
const tokenUseFlushEvery = time.Minute

// tokenRecord is a token as stored, JSON.
type tokenRecord struct {
	Name     string    `json:"name"`
	Role     string    `json:"role"`
	Hash     []byte    `json:"sha256"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires,omitzero"`
	LastUsed time.Time `json:"last_used,omitzero"`
	Revoked  time.Time `json:"revoked,omitzero"`
}

// tokenState is the in-memory copy of the tokens bucket.
type tokenState struct {
	mu      sync.Mutex
	byName  map[string]*tokenRecord
	used    map[string]time.Time // times of use not yet saved, by name
	stop    chan struct{}        // closes the flusher; nil when there is none (read only, closed); under mu
	stopped chan struct{}
}

func (r *tokenRecord) info() *incidentlib.TokenInfo {
	role, _ := incidentlib.ParseRole(r.Role)
	return &incidentlib.TokenInfo{Name: r.Name, Role: role, Created: r.Created, Expires: r.Expires, LastUsed: r.LastUsed, Revoked: r.Revoked}
}

func (r *tokenRecord) active(now time.Time) bool {
	return r.Revoked.IsZero() && (r.Expires.IsZero() || now.Before(r.Expires))
}

// loadTokens reads the tokens bucket into memory (absent in a store
// written before tokens and opened read-only: no tokens) and, for a
// writable store, starts saving times of use.
func (db *DB) loadTokens(readOnly bool) error {
	db.tokens.byName = map[string]*tokenRecord{}
	db.tokens.used = map[string]time.Time{}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTokens)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var r tokenRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			db.tokens.byName[r.Name] = &r
			return nil
		})
	})
	if err != nil || readOnly {
		return err
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	db.tokens.stop, db.tokens.stopped = stop, stopped
	go func() {
		defer close(stopped)
		t := time.NewTicker(tokenUseFlushEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				_ = db.flushTokenUse()
			case <-stop:
				return
			}
		}
	}()
	return nil
}

// stopTokens stops the flusher and saves the last times of use.
func (db *DB) stopTokens() {
	db.tokens.mu.Lock()
	stop := db.tokens.stop
	db.tokens.stop = nil // Authenticate keeps no more times of use
	db.tokens.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-db.tokens.stopped
	_ = db.flushTokenUse()
}

// flushTokenUse saves the times of use gathered since the last flush, in
// one write transaction (none when there are none).
func (db *DB) flushTokenUse() error {
	db.tokens.mu.Lock()
	used := db.tokens.used
	if len(used) == 0 {
		db.tokens.mu.Unlock()
		return nil
	}
	db.tokens.used = map[string]time.Time{}
	db.tokens.mu.Unlock()
	if db.refuseWrite() != nil {
		return nil
	}
	err := db.writeError(db.updateGuarded(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTokens)
		for name, at := range used {
			v := b.Get([]byte(name))
			if v == nil {
				continue
			}
			var r tokenRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			if !at.After(r.LastUsed) {
				continue
			}
			r.LastUsed = at
			if err := putToken(b, &r); err != nil {
				return err
			}
		}
		return nil
	}))
	if err != nil {
		return err
	}
	db.tokens.mu.Lock()
	defer db.tokens.mu.Unlock()
	for name, at := range used {
		if r, ok := db.tokens.byName[name]; ok && at.After(r.LastUsed) {
			c := *r
			c.LastUsed = at
			db.tokens.byName[name] = &c
		}
	}
	return nil
}

func putToken(b *bolt.Bucket, r *tokenRecord) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return b.Put([]byte(r.Name), v)
}

// writeToken stores r in its own write transaction and then in memory.
// Under a log position (a cluster's write) the position is checked and
// stored in the same transaction.
func (db *DB) writeToken(ctx context.Context, r *tokenRecord) error {
	if err := db.writable(ctx); err != nil {
		return err
	}
	err := db.writeError(db.updateGuarded(func(tx *bolt.Tx) error {
		w := newWriteTx(db, tx)
		logged, err := w.startLogged(ctx)
		if err != nil {
			return err
		}
		if err := putToken(tx.Bucket(bucketTokens), r); err != nil {
			return err
		}
		return w.endLogged(logged, nil)
	}))
	if err != nil {
		return err
	}
	db.tokens.byName[r.Name] = r
	return nil
}

// tokenNow is the time a token write records and judges expiry by: the
// log position's for a cluster's write (the same on every node), else
// the store's clock.
func (db *DB) tokenNow(ctx context.Context) time.Time {
	if p, ok := incidentlib.LogPositionFrom(ctx); ok {
		return p.At.UTC()
	}
	return db.Now().UTC()
}

// CreateToken implements incidentlib.TokenService: a new secret, stored
// as its hash by CreateTokenHash.
func (st Tokens) CreateToken(ctx context.Context, name string, role incidentlib.Role, expires time.Time) (string, *incidentlib.TokenInfo, error) {
	if err := incidentlib.ValidateNewToken(name, role, expires, st.db.tokenNow(ctx).Truncate(time.Second)); err != nil {
		return "", nil, err
	}
	secret, hash, err := incidentlib.NewTokenSecret()
	if err != nil {
		return "", nil, err
	}
	info, err := st.CreateTokenHash(ctx, name, role, hash, expires)
	if err != nil {
		return "", nil, err
	}
	return secret, info, nil
}

// CreateTokenHash stores a token whose secret has the SHA-256 hash; see
// incidentlib.TokenWriter.
func (st Tokens) CreateTokenHash(ctx context.Context, name string, role incidentlib.Role, hash []byte, expires time.Time) (*incidentlib.TokenInfo, error) {
	at := st.db.tokenNow(ctx)
	now := at.Truncate(time.Second)
	if err := incidentlib.ValidateNewToken(name, role, expires, now); err != nil {
		return nil, err
	}
	if len(hash) != sha256.Size {
		return nil, incidentlib.Errorf(incidentlib.EINVALID, "a token's hash is %d bytes, not %d", sha256.Size, len(hash))
	}
	r := &tokenRecord{Name: name, Role: role.String(), Hash: slices.Clone(hash), Created: now}
	if !expires.IsZero() {
		r.Expires = expires.UTC()
	}
	st.db.tokens.mu.Lock()
	defer st.db.tokens.mu.Unlock()
	if old, ok := st.db.tokens.byName[name]; ok && old.active(at) {
		return nil, incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"name"}, "a token named %q exists; revoke it first", name)
	}
	for other := range st.db.tokens.byName {
		if other != name && strings.EqualFold(other, name) {
			return nil, incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"name"},
				"a token named %q exists: names are compared without case, and %q would be another author for the same name", other, name)
		}
	}
	if err := st.db.writeToken(ctx, r); err != nil {
		return nil, err
	}
	delete(st.db.tokens.used, name)
	return r.info(), nil
}

// ListTokens implements incidentlib.TokenService.
func (st Tokens) ListTokens(ctx context.Context) ([]*incidentlib.TokenInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, ctxError(err)
	}
	st.db.tokens.mu.Lock()
	defer st.db.tokens.mu.Unlock()
	out := make([]*incidentlib.TokenInfo, 0, len(st.db.tokens.byName))
	for _, r := range st.db.tokens.byName {
		ti := r.info()
		if at, ok := st.db.tokens.used[r.Name]; ok && at.After(ti.LastUsed) {
			ti.LastUsed = at
		}
		out = append(out, ti)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RevokeToken implements incidentlib.TokenService.
func (st Tokens) RevokeToken(ctx context.Context, name string) (*incidentlib.TokenInfo, error) {
	st.db.tokens.mu.Lock()
	defer st.db.tokens.mu.Unlock()
	old, ok := st.db.tokens.byName[name]
	if !ok {
		return nil, incidentlib.FieldErrorf(incidentlib.ENOTFOUND, []string{"name"}, "no token is named %q", name)
	}
	if !old.Revoked.IsZero() {
		return nil, incidentlib.FieldErrorf(incidentlib.ECONFLICT, []string{"name"}, "the token %q was revoked already", name)
	}
	r := *old
	r.Revoked = st.db.tokenNow(ctx).Truncate(time.Second)
	if at, ok := st.db.tokens.used[name]; ok && at.After(r.LastUsed) {
		r.LastUsed = at
	}
	if err := st.db.writeToken(ctx, &r); err != nil {
		return nil, err
	}
	delete(st.db.tokens.used, name)
	return r.info(), nil
}

// Authenticate implements incidentlib.TokenService. The secret's hash is
// compared with every token's in constant time, without stopping at a
// match, so neither which token matched nor how much of it leaks through
// timing.
func (st Tokens) Authenticate(ctx context.Context, secret string) (incidentlib.Identity, error) {
	sum := sha256.Sum256([]byte(secret))
	well := strings.HasPrefix(secret, incidentlib.TokenPrefix)
	now := st.db.Now()
	st.db.tokens.mu.Lock()
	defer st.db.tokens.mu.Unlock()
	var found *tokenRecord
	for _, r := range st.db.tokens.byName {
		if subtle.ConstantTimeCompare(sum[:], r.Hash) == 1 {
			found = r
		}
	}
	switch {
	case found == nil || !well:
		return incidentlib.Identity{}, incidentlib.Errorf(incidentlib.EUNAUTHENTICATED, "the bearer token is not a token of this library")
	case !found.Revoked.IsZero():
		return incidentlib.Identity{}, incidentlib.Errorf(incidentlib.EUNAUTHENTICATED, "the bearer token was revoked")
	case !found.active(now):
		return incidentlib.Identity{}, incidentlib.Errorf(incidentlib.EUNAUTHENTICATED, "the bearer token expired")
	}
	if st.db.tokens.stop != nil { // a writable store saves it later
		st.db.tokens.used[found.Name] = now.UTC().Truncate(time.Second)
	}
	role, err := incidentlib.ParseRole(found.Role)
	if err != nil {
		return incidentlib.Identity{}, err
	}
	return incidentlib.Identity{Name: found.Name, Role: role}, nil
}
