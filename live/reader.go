package live

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/incidentlib/incidentlib"
)

// The reader: one goroutine, running while there are subscriptions. It
// reads the changes after its position once for every live subscriber
// (one read of the log per commit, or per page under a burst), and reads
// the replay of each subscriber that resumes from an older since in
// pages as large as the room in its buffer, until it reaches the
// position and goes live.

// group is the subscriptions of one filter. member holds the incidents
// that matched the filter as of the last change of each the reader
// handed out (or as of the group's start), which says whether an incident
// matched before its next change without keeping any record. Without a
// filter, member is the store's set of the empty filter: the incidents
// lists show (withdrawn ones left out, incidentlib.UnlistedStates), which
// is what matchesFilter then says.
type group struct {
	key    string
	all    bool // no filter: every change is delivered
	filter incidentlib.IncidentFilter
	member *roaring.Bitmap
	subs   map[*Subscription]struct{}
}

// filterKey names a filter; all says it is no filter (every change is
// delivered).
func filterKey(f *incidentlib.IncidentFilter) (key string, all bool) {
	if f == nil || reflect.ValueOf(*f).IsZero() {
		return "", true
	}
	b, _ := json.Marshal(f) // a struct of strings, bools and slices of them
	return string(b), false
}

func (h *Hub) run(idle chan struct{}) {
	defer close(idle)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.stop:
			cancel()
		case <-idle:
		}
	}()
	for {
		h.mu.Lock()
		if len(h.subs) == 0 || h.closed {
			h.running = false
			h.mu.Unlock()
			return
		}
		pos := h.pos
		h.mu.Unlock()
		busy := false
		if h.src.Seq() > pos {
			if err := h.readLive(ctx, pos); err != nil {
				h.failAll(err)
				continue
			}
			busy = true
		}
		if h.replay(ctx) {
			busy = true
		}
		if busy {
			continue
		}
		h.mu.Lock()
		pos = h.pos
		h.mu.Unlock()
		select {
		case <-h.src.SeqAbove(pos):
		case <-h.wake:
		case <-h.stop:
		}
	}
}

// failAll ends every subscription with err (the log could not be read):
// their clients resume with since.
func (h *Hub) failAll(err error) {
	if incidentlib.ErrorCode(err) == incidentlib.EINTERNAL {
		err = incidentlib.Errorf(incidentlib.EUNAVAILABLE, "the change log could not be read: subscribe again with since set to the seq of the last event received")
	}
	h.mu.Lock()
	h.endAllUnlock(err, ReasonError)
}

// readLive hands the changes after pos to the live subscribers.
func (h *Hub) readLive(ctx context.Context, pos uint64) error {
	head := h.src.Seq()
	changes, err := h.src.ChangesSince(ctx, pos, h.opts.PageSize)
	if err != nil {
		return err
	}
	next := pos
	if len(changes) > 0 {
		next = changes[len(changes)-1].Seq
	}
	if len(changes) < h.opts.PageSize {
		next = max(next, head) // the read saw every change up to head
	}
	// The filters' sets after the changes, read outside the lock.
	h.mu.Lock()
	groups := make([]*group, 0, len(h.groups))
	for _, g := range h.groups {
		groups = append(groups, g)
	}
	h.mu.Unlock()
	after := make(map[*group]*roaring.Bitmap, len(groups))
	if len(changes) > 0 {
		for _, g := range groups {
			set, err := h.src.MatchSet(ctx, g.filter)
			if err != nil {
				return err
			}
			after[g] = set
		}
	}
	h.mu.Lock()
	var slowSubs []*Subscription
	for i := range changes {
		c := &changes[i]
		n, _ := incidentlib.ParseID(c.ID)
		ev := &Event{Change: *c}
		for _, g := range h.groups {
			set, ok := after[g]
			if !ok { // a group that started after the read: its set is newer
				set = g.member
			}
			before := g.member.Contains(n)
			matches := !c.Deleted && set.Contains(n)
			if matches {
				g.member.Add(n)
			} else {
				g.member.Remove(n)
			}
			send := g.all || before || matches || c.Deleted
			if !send {
				continue
			}
			for s := range g.subs {
				// Live subscribers only (a catching-up one replays up to
				// the position), and each change once.
				if s.cursor < pos || c.Seq <= s.cursor {
					continue
				}
				if !s.push(Item{Event: ev, Matches: matches}) {
					slowSubs = append(slowSubs, s)
				}
			}
		}
	}
	for s := range h.subs {
		if s.cursor >= pos {
			s.cursor = max(s.cursor, next)
		}
	}
	h.pos = next
	h.mu.Unlock()
	for _, s := range slowSubs {
		s.end(slow(h.opts.Buffer), ReasonSlow)
	}
	return nil
}

// push hands it to s without waiting; false when s's buffer is full.
func (s *Subscription) push(it Item) bool {
	select {
	case s.ch <- it:
		return true
	default:
		return false
	}
}

// replay reads the next page of every catching-up subscriber that has
// room for it; it reports whether it read any.
func (h *Hub) replay(ctx context.Context) bool {
	type job struct {
		s      *Subscription
		cursor uint64
		room   int
	}
	h.mu.Lock()
	pos := h.pos
	var jobs []job
	for s := range h.subs {
		if s.cursor < pos {
			if room := cap(s.ch) - len(s.ch); room > 0 {
				jobs = append(jobs, job{s, s.cursor, min(room, h.opts.PageSize)})
			}
		}
	}
	h.mu.Unlock()
	for _, j := range jobs {
		changes, err := h.src.ChangesSince(ctx, j.cursor, j.room)
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			j.s.end(err, ReasonError)
			continue
		}
		h.mu.Lock()
		g := j.s.g
		cursor := j.cursor
		for i := range changes {
			c := &changes[i]
			if c.Seq > pos {
				cursor = pos
				break
			}
			n, _ := incidentlib.ParseID(c.ID)
			matches := !c.Deleted && g.member.Contains(n)
			// Whether the incident matched before the replayed change is
			// not known (the log keeps each incident's latest change), so
			// a replay hands every change on; matches tells the client
			// whether to keep the incident.
			j.s.push(Item{Event: &Event{Change: *c}, Matches: matches}) // room was counted
			cursor = c.Seq
		}
		if len(changes) < j.room {
			cursor = pos // the read saw the whole log up to pos
		}
		j.s.cursor = cursor
		j.s.replaying.Store(cursor < pos)
		h.mu.Unlock()
	}
	return len(jobs) > 0
}
