package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/iljson"
)

// Streaming: a bulk import reads IL-JSON one record at a time instead of
// the whole file, so that its memory does not grow with the file. JSON
// Lines and arrays stream; one object (possibly over many lines) is read
// whole, as it is one record. Each record goes through the same checks as
// Load's (ilRecord, check); framing follows iljson.SplitRecords
// (blank lines skipped, a file is JSON Lines when its second line starts
// an object though its first does not parse).

// Streamer reads IL-JSON files one record at a time.
type Streamer struct {
	l        *loader
	maxBytes int
	// DecodeOnly skips the checks: for a second pass over input that a
	// first pass checked. Records that do not decode are then skipped
	// without being reported, and those that decode are not checked (not
	// even for valid UTF-8).
	DecodeOnly bool
	// Encode, when set, is called with each record that passes (on the
	// goroutines that decode) and its result handed on as Record.Encoded:
	// the record's stored form, made ahead of the writer, on every core.
	Encode   func(*incidentlib.Incident) ([]byte, error)
	seq      int
	inflight atomic.Int64 // records read and not yet handed on
	held     int          // the most records in flight at once
}

// Seq returns how many records Stream has met so far (good and bad): the
// sequence number, from 0, of the last record passed to each is Seq()-1.
// It is the same on every pass over the same input, with or without
// DecodeOnly.
func (s *Streamer) Seq() int { return s.seq }

// NewStreamer returns a Streamer with Load's options whose records may be
// up to maxBytes bytes (0: incidentlib.DefaultMaxRecordBytes). A longer
// JSON line is skipped without being held in memory and reported as a
// problem; an array element or a single object is read whole first.
func NewStreamer(opts Options, maxBytes int) *Streamer {
	if maxBytes <= 0 {
		maxBytes = incidentlib.DefaultMaxRecordBytes
	}
	return &Streamer{l: newLoader(opts), maxBytes: maxBytes}
}

// StreamFormat returns FormatILJSON or FormatJSONL when a file named name
// that starts with prefix (its first bytes, at least a few KiB when the
// file is that long) is IL-JSON Load would read, or "".
func StreamFormat(name string, prefix []byte) Format {
	f, skip := detect(name, prefix)
	if skip != "" || (f != FormatILJSON && f != FormatJSONL) {
		return ""
	}
	return f
}

// Stream reads the IL-JSON file name from r and calls each with every
// record that passes Load's checks, in file order, with the size of its
// JSON text; bad receives every problem, in file order too. It returns an
// error only when r cannot be read or each returns one. Records are read
// by one goroutine and decoded and checked by several (GOMAXPROCS), a few
// chunks ahead of each: at most StreamAhead() records are held between
// reading and each (MaxHeld counts them).
func (s *Streamer) Stream(name string, r io.Reader, each func(rec Record, size int) error, bad func(Problem)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, _ := br.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		_, _ = br.Discard(3) // the three bytes are buffered: Peek returned them
	}
	coll := s.l.collectionFor(name)
	f := file{Path: name, Rel: coll.rel(name), Coll: coll}
	lr := &lineCounter{r: br}
	first, line, err := skipSpaces(br, lr)
	if err == io.EOF {
		bad(Problem{Where: name, Reason: "empty file"})
		return nil
	}
	if err != nil {
		return err
	}

	// The reader fills chunks of jobs; each chunk is processed by its own
	// goroutine, and the chunks are handed to each in order.
	type chunk struct {
		jobs []streamJob
		done chan struct{}
	}
	ordered := make(chan *chunk, streamDepth())
	stop := make(chan struct{})
	var readErr error
	go func() {
		defer close(ordered)
		cur := &chunk{done: make(chan struct{})}
		send := func() bool {
			c := cur
			cur = &chunk{done: make(chan struct{})}
			select {
			case ordered <- c:
			case <-stop:
				return false
			}
			go func() {
				for i := range c.jobs {
					s.process(&c.jobs[i], f)
				}
				close(c.done)
			}()
			return true
		}
		emit := func(j streamJob) error {
			cur.jobs = append(cur.jobs, j)
			if len(cur.jobs) == streamChunk && !send() {
				return errStopped
			}
			return nil
		}
		if first == '[' {
			readErr = s.streamArray(name, lr, emit)
		} else {
			readErr = s.streamLines(name, br, line, emit)
		}
		if len(cur.jobs) > 0 {
			send()
		}
	}()
	var eachErr error
	for c := range ordered {
		<-c.done
		for i := range c.jobs {
			j := &c.jobs[i]
			if eachErr != nil {
				break
			}
			if j.unit {
				s.seq++
			}
			switch {
			case j.prob != nil:
				bad(*j.prob)
			case j.rec.Incident != nil:
				s.held = max(s.held, int(s.inflight.Load()))
				eachErr = each(j.rec, len(j.raw))
			}
			if j.unit {
				s.inflight.Add(-1)
			}
			c.jobs[i] = streamJob{}
		}
		if eachErr != nil {
			close(stop)
			for c := range ordered { // let the reader end
				<-c.done
			}
			return eachErr
		}
	}
	if readErr == errStopped {
		readErr = nil
	}
	return readErr
}

// StreamAhead is the most records Stream holds between reading them and
// handing them to each: the chunks in flight.
func StreamAhead() int { return streamChunk * (streamDepth() + 2) }

func streamDepth() int { return max(2, 2*runtime.GOMAXPROCS(0)) }

// streamChunk is the number of records a goroutine decodes at a time.
const streamChunk = 64

var errStopped = errors.New("stopped")

// streamJob is one record (or a problem the reader found) on its way from
// the reader to each.
type streamJob struct {
	raw   []byte
	where string
	unit  bool     // a record of the file (counted in Seq), not a problem of the file as a whole
	prob  *Problem // set by the reader or by process
	rec   Record   // set by process
}

// MaxHeld returns the largest number of records that were decoded and not
// yet handed to each at once, over all Stream calls.
func (s *Streamer) MaxHeld() int { return s.held }

// process decodes and checks the record of j (concurrently with others).
func (s *Streamer) process(j *streamJob, f file) {
	if j.prob != nil || !j.unit {
		return
	}
	raw, where := j.raw, j.where
	if s.DecodeOnly {
		t := bytes.TrimSpace(raw)
		decode := decodeIL
		if len(t) > 0 && t[0] == '{' {
			decode = decodeObject
		}
		if inc, err := decode(t); err == nil && len(raw) <= s.maxBytes {
			j.rec = Record{Incident: inc, Where: where}
			s.encode(j)
		}
		return
	}
	if !utf8.Valid(raw) {
		off := iljson.InvalidUTF8Offset(raw)
		j.prob = &Problem{Where: where, Reason: fmt.Sprintf("not valid UTF-8: invalid byte 0x%02x at byte offset %d of the record", raw[off], off)}
		return
	}
	f.Data = raw
	rec, p := s.l.ilRecord(&f, raw, where, 0)
	if p != nil {
		if p.Where == f.Path || strings.HasPrefix(p.Where, f.Path+":") {
			p.Where = where
		}
		j.prob = p
		return
	}
	if err := incidentlib.CheckRecordSize(rec.Incident.ID, len(raw), s.maxBytes); err != nil {
		j.prob = &Problem{Where: where, ID: rec.Incident.ID, Reason: incidentlib.ErrorMessage(err)}
		return
	}
	if p, ok := s.l.check(rec); !ok {
		j.prob = &p
		return
	}
	j.rec = rec
	s.encode(j)
}

// encode sets j.rec.Encoded with Encode, if set; a record it fails to
// encode is handed on without (its writer encodes it and says why).
func (s *Streamer) encode(j *streamJob) {
	if s.Encode == nil {
		return
	}
	if b, err := s.Encode(j.rec.Incident); err == nil {
		j.rec.Encoded = b
	}
}

// streamLines reads JSON Lines, or one object when the first line does not
// parse and the second does not start an object.
func (s *Streamer) streamLines(name string, br *bufio.Reader, line int, emit func(streamJob) error) error {
	n := 0
	var whole []byte // a single object over several lines, read whole
	for ; ; line++ {
		raw, size, err := readLine(br, s.maxBytes)
		if err != nil && err != io.EOF {
			return err
		}
		text := bytes.TrimSpace(raw)
		switch {
		case whole != nil:
			whole = append(append(whole, '\n'), raw...)
		case size > s.maxBytes+1:
			n++
			id := idFromPrefix(raw)
			if err := s.emitJob(emit, streamJob{unit: true, prob: &Problem{Where: fmt.Sprintf("%s:%d", name, line), ID: id,
				Reason: incidentlib.ErrorMessage(incidentlib.CheckRecordSize(id, size, s.maxBytes))}}); err != nil {
				return err
			}
		case len(text) == 0:
		case n == 0 && !json.Valid(text) && !nextStartsObject(br):
			whole = append([]byte(nil), raw...)
		default:
			n++
			if err := s.emitJob(emit, streamJob{raw: text, where: fmt.Sprintf("%s:%d", name, line), unit: true}); err != nil {
				return err
			}
		}
		if err == io.EOF {
			break
		}
	}
	if whole != nil {
		text := bytes.TrimSpace(whole)
		if !json.Valid(text) {
			var v any
			err := json.Unmarshal(text, &v)
			p := jsonProblem(&file{Path: name}, text, 0, err)
			return emit(streamJob{prob: &p})
		}
		return s.emitJob(emit, streamJob{raw: text, where: fmt.Sprintf("%s:%d", name, 1), unit: true})
	}
	if n == 0 {
		return emit(streamJob{prob: &Problem{Where: name, Reason: "no records"}})
	}
	return nil
}

// emitJob hands a record to the pipeline, counting it as held.
func (s *Streamer) emitJob(emit func(streamJob) error, j streamJob) error {
	s.inflight.Add(1)
	return emit(j)
}

// nextStartsObject reports whether the next non-blank line starts an object.
func nextStartsObject(br *bufio.Reader) bool {
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if len(b) < i {
			return false
		}
		switch b[i-1] {
		case ' ', '\t', '\r', '\n':
			if err != nil {
				return false
			}
			continue
		}
		return b[i-1] == '{'
	}
}

// readLine returns the next line without its newline, and its length. A
// line longer than max+1 bytes is read to its end but not kept: raw is
// then its first bytes (up to 64 KiB, to name the record) and size its
// length.
func readLine(br *bufio.Reader, max int) (raw []byte, size int, err error) {
	var buf []byte
	keep := max + 1
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		if size <= keep {
			buf = append(buf, chunk...)
		} else if len(buf) < 64<<10 {
			buf = append(buf, chunk[:min(len(chunk), 64<<10-len(buf))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if n := len(buf); n > 0 && buf[n-1] == '\n' {
			buf = buf[:n-1]
			size--
		}
		return buf, size, err
	}
}

// streamArray reads a JSON array one element at a time.
func (s *Streamer) streamArray(name string, lr *lineCounter, emit func(streamJob) error) error {
	dec := json.NewDecoder(lr)
	arrayProblem := func(err error) error {
		where := name
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			where = fmt.Sprintf("%s:%d", name, lr.lineAt(se.Offset))
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			where = fmt.Sprintf("%s:%d", name, lr.lineAt(lr.read))
			err = io.ErrUnexpectedEOF
		}
		return emit(streamJob{prob: &Problem{Where: where, Reason: "malformed JSON: " + err.Error()}})
	}
	if _, err := dec.Token(); err != nil {
		return arrayProblem(err)
	}
	n := 0
	for ; dec.More(); n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return arrayProblem(err)
		}
		end := dec.InputOffset()
		start := end - int64(len(raw))
		at := lr.lineAt(start)
		if err := s.emitJob(emit, streamJob{raw: raw, where: fmt.Sprintf("%s:%d [%d]", name, at, n), unit: true}); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return arrayProblem(err)
	}
	// Nothing but space may follow.
	rest := io.MultiReader(dec.Buffered(), lr)
	var b [1]byte
	for {
		_, err := rest.Read(b[:])
		if err != nil {
			break
		}
		if b[0] != ' ' && b[0] != '\t' && b[0] != '\r' && b[0] != '\n' {
			return emit(streamJob{prob: &Problem{Where: fmt.Sprintf("%s:%d", name, lr.lineAt(dec.InputOffset())), Reason: "unexpected data after the JSON array"}})
		}
	}
	if n == 0 {
		return emit(streamJob{prob: &Problem{Where: name, Reason: "empty array: no records"}})
	}
	return nil
}

// skipSpaces peeks past leading white space and returns the first other
// byte and its line, leaving it unread.
func skipSpaces(br *bufio.Reader, lr *lineCounter) (byte, int, error) {
	line := 1
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, line, err
		}
		switch b {
		case '\n':
			line++
			fallthrough
		case ' ', '\t', '\r':
			continue
		}
		_ = br.UnreadByte() // the byte just read: unreading it cannot fail
		lr.base, lr.lines = 0, line
		return b, line, nil
	}
}

// lineCounter counts the lines of what a json.Decoder reads, so that an
// element's offset can be turned into its line while the decoder holds
// only the element. Offsets asked for must not decrease.
type lineCounter struct {
	r     io.Reader
	read  int64   // bytes read
	nl    []int64 // offsets of the newlines read and not yet counted
	lines int     // the line of offset base
	base  int64
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i, b := range p[:n] {
		if b == '\n' {
			c.nl = append(c.nl, c.read+int64(i))
		}
	}
	c.read += int64(n)
	return n, err
}

// lineAt returns the line of byte offset off.
func (c *lineCounter) lineAt(off int64) int {
	i := 0
	for i < len(c.nl) && c.nl[i] < off {
		i++
	}
	c.lines += i
	c.nl = c.nl[i:]
	return c.lines
}

// ListFiles returns path itself, or the regular files under the directory
// path in lexical order, leaving out hidden files and folders: the files
// Load reads.
func ListFiles(path string) ([]string, error) { return listFiles(path) }

// idFromPrefix returns the top-level "id" of a JSON object whose first
// bytes are prefix, if it comes before the prefix ends.
func idFromPrefix(prefix []byte) string {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return ""
		}
		if k == "id" {
			v, _ := dec.Token()
			s, _ := v.(string)
			return s
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}
