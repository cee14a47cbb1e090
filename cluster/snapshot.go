package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/incidentlib/incidentlib"
)

// Snapshots: a copy of a node's store (a bbolt backup, which holds its own
// log position) kept in a JetStream object store replicated like the
// stream. A new or wiped node starts from the latest snapshot and then
// follows the stream from the snapshot's position, never replaying years
// of writes; `incidentlib cluster init` makes an existing library the
// cluster's first snapshot.

const (
	// snapshotObject is the name of the latest snapshot.
	snapshotObject = "latest"
	// metaSeq is the snapshot's log position, in its metadata; metaLibrary
	// the id of the library the cluster began from (cluster init), if any.
	metaSeq     = "log-seq"
	metaLibrary = "library"
	// SnapshotChunk is the size of a snapshot's chunks (the last one's at
	// most): below the message limit with room for the headers.
	SnapshotChunk = MaxMessageBytes - 64<<10
)

func (n *Node) snapshotBucket() string { return n.cfg.Stream + "_SNAPSHOTS" }

func (n *Node) objects(ctx context.Context, create bool) (jetstream.ObjectStore, error) {
	if !create {
		return n.js.ObjectStore(ctx, n.snapshotBucket())
	}
	replicas := n.cfg.Replicas
	return n.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: n.snapshotBucket(),
		Description: "incidentlib: the latest snapshot of a node's store", Storage: jetstream.FileStorage, Replicas: replicas})
}

// PublishSnapshot stores a snapshot of a store at log position seq,
// written by backup, as the latest; library is the store's library id
// (storage.ClusterLog.ClusterLibrary, "" for none). A snapshot no newer than the
// latest is not stored.
func (n *Node) PublishSnapshot(ctx context.Context, seq uint64, library string, backup func(io.Writer) error) error {
	obs, err := n.objects(ctx, true)
	if err != nil {
		return incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster's snapshots are unavailable: %v", err)
	}
	if info, err := obs.GetInfo(ctx, snapshotObject); err == nil {
		if cur, _ := strconv.ParseUint(info.Metadata[metaSeq], 10, 64); cur >= seq {
			return nil
		}
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(backup(pw)) }()
	// The object store publishes a chunk for each Read, asynchronously,
	// with at most 4,000 unacknowledged; a pipe's Read returns one Write
	// of the backup (a few KiB), so a store of 100,000 incidents made
	// more chunks than that before the acknowledgements of writes synced
	// to disk came, and the put failed ("stalled"). fullReader fills each
	// chunk, and the chunks are near the message limit.
	_, err = obs.Put(ctx, jetstream.ObjectMeta{Name: snapshotObject, Description: "a bbolt backup of a node's store",
		Opts:     &jetstream.ObjectMetaOptions{ChunkSize: SnapshotChunk},
		Metadata: map[string]string{metaSeq: strconv.FormatUint(seq, 10), metaLibrary: library, "node": n.cfg.NodeName, "at": time.Now().UTC().Format(time.RFC3339)}}, fullReader{pr})
	pr.CloseWithError(err)
	return err
}

// fullReader reads whole buffers: the object store makes a chunk of each
// Read, and fills none but the last partly.
type fullReader struct{ r io.Reader }

func (f fullReader) Read(p []byte) (int, error) {
	n, err := io.ReadFull(f.r, p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return n, err
}

// FetchSnapshot writes the latest snapshot to path (a new file) and
// returns its log position; ok is false when the cluster has none. The
// file appears whole or not at all.
func (n *Node) FetchSnapshot(ctx context.Context, path string) (seq uint64, ok bool, err error) {
	obs, err := n.objects(ctx, false)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	res, err := obs.Get(ctx, snapshotObject)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer res.Close()
	info, err := res.Info()
	if err != nil {
		return 0, false, err
	}
	seq, _ = strconv.ParseUint(info.Metadata[metaSeq], 10, 64)
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".snapshot-*")
	if err != nil {
		return 0, false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, res); err != nil {
		tmp.Close()
		return 0, false, fmt.Errorf("cluster: fetch the snapshot: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return 0, false, err
	}
	if err := tmp.Close(); err != nil {
		return 0, false, err
	}
	if err := os.Link(tmp.Name(), path); err != nil { // never over an existing file
		return 0, false, err
	}
	return seq, true, nil
}

// WaitQuorum waits until the node reaches the stream's leader, at most
// the start timeout: UNAVAILABLE then.
func (n *Node) WaitQuorum(ctx context.Context) error {
	deadline := time.Now().Add(n.cfg.StartTimeout)
	for {
		_, err := n.LastSeq(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// latest returns the latest snapshot's description, nil when the cluster
// has none.
func (n *Node) latest(ctx context.Context) (*jetstream.ObjectInfo, error) {
	obs, err := n.objects(ctx, false)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	info, err := obs.GetInfo(ctx, snapshotObject)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, nil
	}
	return info, err
}

// LatestSnapshot returns the log position of the cluster's latest
// snapshot and when it was stored (by the NATS server's clock); ok is
// false when the cluster has none.
func (n *Node) LatestSnapshot(ctx context.Context) (seq uint64, at time.Time, ok bool, err error) {
	info, err := n.latest(ctx)
	if err != nil || info == nil {
		return 0, time.Time{}, false, err
	}
	seq, _ = strconv.ParseUint(info.Metadata[metaSeq], 10, 64)
	return seq, info.ModTime, true, nil
}

// SnapshotLibrary returns the library id the cluster's latest snapshot
// carries ("" for a cluster that did not begin from a library made a
// cluster node by `cluster init`); ok is false when it has no snapshot.
func (n *Node) SnapshotLibrary(ctx context.Context) (library string, ok bool, err error) {
	info, err := n.latest(ctx)
	if err != nil || info == nil {
		return "", false, err
	}
	return info.Metadata[metaLibrary], true, nil
}

// HasSnapshot reports whether the cluster holds a snapshot.
func (n *Node) HasSnapshot(ctx context.Context) (bool, error) {
	info, err := n.latest(ctx)
	return info != nil, err
}

// Bootstrap brings a node without a store file its starting point: the
// cluster's latest snapshot, written to path. On a new cluster (an empty
// stream) it waits up to wait for a snapshot that `cluster init` may be
// about to publish; ok is false when the node is to start empty (no
// snapshot, and the stream holds every write from the first).
func (n *Node) Bootstrap(ctx context.Context, path string, wait time.Duration) (seq uint64, ok bool, err error) {
	if err := n.WaitQuorum(ctx); err != nil {
		return 0, false, err
	}
	deadline := time.Now().Add(wait)
	retryUntil := time.Now().Add(n.cfg.StartTimeout)
	for {
		seq, ok, err := n.FetchSnapshot(ctx, path)
		if err != nil && retryFetch(err) && ctx.Err() == nil && time.Now().Before(retryUntil) {
			// Read from a copy of the object store that is still catching
			// up (this node's own, when it was wiped: a digest mismatch),
			// or from one just made, whose servers do not answer yet (no
			// responders): read again.
			n.log.Debug("fetching the cluster's snapshot again", "err", err)
			time.Sleep(500 * time.Millisecond)
			continue
		}
		if err != nil || ok {
			return seq, ok, err
		}
		last, err := n.LastSeq(ctx)
		if err != nil {
			return 0, false, err
		}
		if last > 0 || time.Now().After(deadline) {
			return 0, false, nil
		}
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// retryFetch reports whether a snapshot's fetch that failed with err may
// succeed when tried again: every failure of the cluster at a node's
// start (a copy catching up, servers not answering yet, a timeout), not
// one of this node's files.
func retryFetch(err error) bool {
	var pathErr *fs.PathError
	var linkErr *os.LinkError
	return !errors.As(err, &pathErr) && !errors.As(err, &linkErr) && !errors.Is(err, context.Canceled)
}
