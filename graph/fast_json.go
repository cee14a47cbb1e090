package graph

import (
	"bytes"
	"math"
	"strconv"

	"github.com/99designs/gqlgen/graphql"
)

// JSON output, as gqlgen writes it.

func (x *fastExec) key(i int, f *pfield) {
	if i > 0 {
		x.byte(',')
	}
	x.raw(f.key)
}

// quotedKey is the response key name as key writes it, quoted, with its
// colon.
func quotedKey(name string) string {
	x := &fastExec{out: make([]byte, 0, len(name)+8)}
	x.str(name)
	x.byte(':')
	return string(x.out)
}

func (x *fastExec) null() { x.raw("null") }

func (x *fastExec) bool(b bool) {
	if b {
		x.raw("true")
	} else {
		x.raw("false")
	}
}

func (x *fastExec) int(n int) {
	x.set(strconv.AppendInt(x.out, int64(n), 10))
}

// float writes f as gqlgen's Float marshaler does (%g); what JSON cannot
// hold goes to gqlgen.
func (x *fastExec) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		bail()
	}
	x.set(strconv.AppendFloat(x.out, f, 'g', -1, 64))
}

func (x *fastExec) optInt(n *int) {
	if n == nil {
		x.null()
		return
	}
	x.int(*n)
}

func (x *fastExec) optStr(s *string) {
	if s == nil {
		x.null()
		return
	}
	x.str(*s)
}

const hexDigits = "0123456789ABCDEF"

// escapeIn8 tells whether one of the 8 bytes of w (little-endian) is a
// control character, a quote or a backslash (what str escapes), testing
// them as one word.
func escapeIn8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// A byte below 0x20, or zero after xor with '"' or '\\', leaves its
	// high bit in (b - k) &^ b; no byte does unless one of them is there.
	quote, backslash := w^(ones*'"'), w^(ones*'\\')
	return ((w-ones*0x20)&^w|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0
}

// word8 is the 8 bytes of s from i on, little-endian (one load).
func word8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// str writes s quoted as gqlgen's string marshaler does: it escapes the
// quote, the backslash and control characters and nothing else.
func (x *fastExec) str(s string) {
	b := append(x.out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		// Eight bytes at a time while none needs escaping.
		for i+8 <= len(s) && !escapeIn8(word8(s, i)) {
			i += 8
		}
		// The last bytes in one word too, the one ending the string.
		if i >= len(s) || i+8 > len(s) && len(s) >= 8 && !escapeIn8(word8(s, len(s)-8)) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != '\\' && c != '"' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '\t':
			b = append(b, `\t`...)
		case '\r':
			b = append(b, `\r`...)
		case '\n':
			b = append(b, `\n`...)
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		default:
			b = append(b, `\u00`...)
			b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	x.set(append(b, '"'))
}

// set makes b, appended to out, the response written so far. When b is
// out's own array, grown in place, only the length changes: no pointer is
// stored, so no write barrier is taken while the collector marks.
func (x *fastExec) set(b []byte) {
	if cap(b) == cap(x.out) {
		x.out = x.out[:len(b)]
	} else {
		x.out = b
	}
}

// byte writes c.
func (x *fastExec) byte(c byte) { x.out = append(x.out, c) }

// raw writes s as it is.
func (x *fastExec) raw(s string) { x.out = append(x.out, s...) }

// marshal writes what m's MarshalGQL writes.
func (x *fastExec) marshal(m graphql.Marshaler) {
	w := bytes.NewBuffer(x.out)
	m.MarshalGQL(w)
	x.set(w.Bytes())
}
