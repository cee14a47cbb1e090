package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/incidentlib/incidentlib"
)

// Idempotency keys are bound to their content. A client's key names its
// request; each write of the request (several mutations of one document,
// an import's chunks and commit) takes the next ordinal of the request, so
// that the message id of a write is the key and its place in the request,
// whatever the write is. The message carries the digest of what it
// writes (HeaderContent: the operation, the target, the record or
// records, the condition, the comment, the author and role; not the
// stamped time nor a token's hash, which a retry makes anew). A write
// whose message id the log or this node already has is answered with the
// first write's result only when the digests are equal; otherwise it is
// refused with CONFLICT (ErrKeyReused's message), on whichever node it
// comes, and nothing is written: the client does not believe written what
// was dropped.

// HeaderContent is the header of the digest of a write's content.
const HeaderContent = "Incidentlib-Content"

type idempotencyKey struct{}

// requestKey is a request's client key and the ordinal of its next write.
type requestKey struct {
	key string
	n   atomic.Int64
}

// WithIdempotencyKey carries the client's idempotency key of a request's
// writes (the Idempotency-Key header): a retry of the request with the
// same key and the same writes applies none of them again (within the
// stream's dedupe window) and gets their first results; the same key with
// other writes is refused with CONFLICT.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, &requestKey{key: key})
}

// idempotencyKeyOf returns the message id of the request's next write:
// the client's key and the write's ordinal in the request, or a new
// random id.
func idempotencyKeyOf(ctx context.Context) string {
	if k, ok := ctx.Value(idempotencyKey{}).(*requestKey); ok && k.key != "" {
		return "c:" + k.key + "#" + strconv.FormatInt(k.n.Add(1)-1, 10)
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "n:" + hex.EncodeToString(b[:])
}

// contentOf is the digest of what w writes: w without its stamped time
// and a token's hash (made anew by each try), nor an import commit's
// chunk positions (ImportIncidents digests the whole import instead).
func contentOf(w *Write) string {
	c := *w
	c.At, c.TokenHash, c.Chunks = time.Time{}, nil, nil
	data, err := json.Marshal(&c)
	if err != nil {
		return ""
	}
	return digest(data)
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// errKeyReused is the answer to a write whose idempotency key came with
// another write first.
func errKeyReused(key string) error {
	return incidentlib.Errorf(incidentlib.ECONFLICT,
		"the Idempotency-Key was used for another write (another operation, target, record or author; message id %q): nothing was written; use a new key for a new write", key)
}

// checkContent refuses the result res of message id key for a write whose
// content is content when the message wrote something else. A message of
// a node that did not record digests (an earlier release) is not judged.
func checkContent(res Result, key, content string) error {
	if res.content != "" && content != "" && res.content != content {
		return errKeyReused(key)
	}
	return nil
}

// msgContent returns the content digest of the message at seq ("" when it
// carries none), from the stream's leader.
func (n *Node) msgContent(ctx context.Context, seq uint64) (string, error) {
	stream, err := n.ensureStream(ctx)
	if err != nil {
		return "", incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster is unavailable: %v", err)
	}
	m, err := stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return "", nil
	}
	if err != nil {
		return "", incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the cluster is unavailable: %v", err)
	}
	return m.Header.Get(HeaderContent), nil
}
