package iljson

import (
	"bytes"
	"unicode/utf8"
)

// Reader reads a JSON text in place, member by member, for a caller that
// wants a few members of a record and passes over the rest (the search
// index reads a record's org and texts). It is the scanner of the
// one-pass decoder: member names are plain ASCII only, strings with
// escapes are checked as the decoder checks them and others for valid
// UTF-8 (anything else fails, and the caller takes the full decoder's
// path); a value passed over is not checked (endOfValue): the text is one
// the program wrote. After a failure every
// method does nothing and OK is false.
type Reader struct {
	d  decoder
	ok bool
}

// NewReader returns a Reader at the start of data.
func NewReader(data []byte) Reader { return Reader{d: decoder{data: data}, ok: true} }

// OK reports whether everything read so far was what was asked for.
func (r *Reader) OK() bool { return r.ok }

// Fail marks the read as failed: the caller found what it does not read.
func (r *Reader) Fail() { r.ok = false }

// Object reads an object, calling member with each member's name (a part
// of the text, valid during the call) and the reader at its value, which
// member must read or pass over.
func (r *Reader) Object(member func(name []byte)) {
	d := &r.d
	d.space()
	if !r.ok || d.i >= len(d.data) || d.data[d.i] != '{' {
		r.Fail()
		return
	}
	d.i++
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return
	}
	for r.ok {
		name, ok := d.key()
		if d.space(); !ok || d.i >= len(d.data) || d.data[d.i] != ':' {
			r.Fail()
			return
		}
		d.i++
		d.space()
		member(name)
		if !r.ok {
			return
		}
		done, ok := d.next('}')
		if !ok {
			r.Fail()
		}
		if done {
			return
		}
	}
}

// Null reads a null if one is next.
func (r *Reader) Null() bool {
	r.d.space()
	return r.ok && r.d.literal("null")
}

// String reads a string (a copy). A string without escapes is checked
// for valid UTF-8 only, found with the loose scan (stringEnd); one with
// escapes is read strictly.
func (r *Reader) String() string {
	d := &r.d
	d.space()
	if !r.ok {
		return ""
	}
	start := d.i
	end := stringEnd(d.data, start)
	if end < 0 {
		r.Fail()
		return ""
	}
	if raw := d.data[start+1 : end-1]; bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		d.i = end
		return string(raw)
	}
	if !d.skipString() {
		r.Fail()
		return ""
	}
	s, ok := d.unescape(start + 1)
	if !ok {
		r.Fail()
	}
	return s
}

// Skip passes over one value.
func (r *Reader) Skip() {
	r.d.space()
	if !r.ok {
		return
	}
	end := endOfValue(r.d.data, r.d.i)
	if end < 0 {
		r.Fail()
		return
	}
	r.d.i = end
}

// End reports whether all went well and only space is left.
func (r *Reader) End() bool {
	r.d.space()
	return r.ok && r.d.i == len(r.d.data)
}
