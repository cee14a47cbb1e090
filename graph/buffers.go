package graph

import (
	"bytes"
	"context"
	"sync"
)

// ResponseBuffers lends graph.FastReads the buffers it writes responses
// into. An HTTP transport puts one in a request's context with
// WithResponseBuffers and calls Release once the response is written;
// the buffers then serve later requests. Without one, FastReads makes a
// buffer per response. A list page is 7.5 kB and a search page 10–20 kB:
// made anew for every request, the buffers' growth and the zeroing of
// fresh memory were 5–10% of the CPU of a search over HTTP.
type ResponseBuffers struct{ bufs []*bytes.Buffer }

// PooledBuffer takes a buffer from the pool the response buffers share
// (the server's response capture uses it too); PutBuffer returns it.
func PooledBuffer() *bytes.Buffer { return bufferPool.Get().(*bytes.Buffer) }

// PutBuffer returns b to the pool; nothing may use it afterwards. A buffer
// grown past maxPooledBuffer is left to the collector.
func PutBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuffer {
		b.Reset()
		bufferPool.Put(b)
	}
}

var bufferPool = sync.Pool{New: func() any {
	b := new(bytes.Buffer)
	b.Grow(initialBuffer)
	return b
}}

const (
	initialBuffer   = 16 << 10
	maxPooledBuffer = 1 << 20
)

type responseBuffersKey struct{}

// WithResponseBuffers returns ctx with response buffers that the caller
// releases once the response is written.
func WithResponseBuffers(ctx context.Context) (context.Context, *ResponseBuffers) {
	rb := &ResponseBuffers{}
	return context.WithValue(ctx, responseBuffersKey{}, rb), rb
}

// Release returns the buffers lent; the responses written into them must
// not be used afterwards.
func (rb *ResponseBuffers) Release() {
	for _, b := range rb.bufs {
		PutBuffer(b)
	}
	rb.bufs = rb.bufs[:0]
}

// responseBuffer is a buffer for one response: lent by the context's
// ResponseBuffers, or new.
func responseBuffer(ctx context.Context) *bytes.Buffer {
	if rb, ok := ctx.Value(responseBuffersKey{}).(*ResponseBuffers); ok {
		b := PooledBuffer()
		rb.bufs = append(rb.bufs, b)
		return b
	}
	b := new(bytes.Buffer)
	b.Grow(initialBuffer)
	return b
}
