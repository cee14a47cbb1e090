package importer

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/incidentlib/incidentlib"
)

// Extra fields the planner keeps on every imported record.
const (
	// ExtraSourceKey is the collection and source id of the record's primary
	// source: the one it was first imported from. It never changes.
	ExtraSourceKey = "source_key"
	// ExtraMergedSources lists the other collections' records merged into
	// this incident: [{"source_key","licence","attribution"}], by key.
	ExtraMergedSources = "merged_sources"
	// ExtraMergedIDs lists incident ids merged away into this one.
	ExtraMergedIDs = "merged_ids"
)

// Index is what the planner needs to know of the store.
type Index struct {
	// BySourceKey maps every source key (primary or merged) to its incident id.
	BySourceKey map[string]string
	// ByURL maps every normalized source URL to its incident id.
	ByURL map[string]string
	// Load returns the stored incidents with the given ids (nil if absent).
	Load func(ids []string) ([]*incidentlib.Incident, error)
	// MaxID is the largest incident number in use; new ids count up from it.
	MaxID uint32
}

// NewIndex builds an Index from every stored incident.
func NewIndex(all []*incidentlib.Incident) *Index {
	idx := &Index{BySourceKey: map[string]string{}, ByURL: map[string]string{}}
	byID := map[string]*incidentlib.Incident{}
	for _, inc := range all {
		byID[inc.ID] = inc
		if n, ok := incidentlib.ParseID(inc.ID); ok && n > idx.MaxID {
			idx.MaxID = n
		}
		for _, k := range sourceKeys(inc) {
			if _, dup := idx.BySourceKey[k]; !dup {
				idx.BySourceKey[k] = inc.ID
			}
		}
		for _, s := range inc.Sources {
			if u := NormalizeURL(s.URL); u != "" {
				if _, dup := idx.ByURL[u]; !dup {
					idx.ByURL[u] = inc.ID
				}
			}
		}
	}
	idx.Load = func(ids []string) ([]*incidentlib.Incident, error) {
		out := make([]*incidentlib.Incident, len(ids))
		for i, id := range ids {
			out[i] = byID[id]
		}
		return out, nil
	}
	return idx
}

// Action is what a plan does with one record.
type Action string

// Actions.
const (
	ActionCreate Action = "created"
	ActionUpdate Action = "updated"
	ActionMerge  Action = "merged"
)

// Outcome is the plan for one record.
type Outcome struct {
	Where  string
	Key    string
	ID     string
	Action Action
}

// Plan is what an import will write.
type Plan struct {
	// Upserts are the full records to write, in id order.
	Upserts []*incidentlib.Incident
	// Merges maps incident ids merged away to the id that absorbed them.
	Merges   map[string]string
	Outcomes []Outcome
}

// Counts returns how many records each action took.
func (p *Plan) Counts() map[Action]int {
	c := map[Action]int{}
	for _, o := range p.Outcomes {
		c[o.Action]++
	}
	return c
}

// PlanImport decides the id of every record so that importing the same
// collection again updates instead of duplicating:
//   - a record whose source key is known keeps that incident's id;
//   - otherwise a record sharing a source URL (after NormalizeURL) with an
//     incident is merged into it, as another source of the same postmortem;
//   - otherwise it gets the next free id.
//
// When a record's key names one incident and its URL another, the two are
// the same postmortem: the second is merged into the first and its id is
// recorded in Merges, so it keeps resolving. Merging is deterministic: for
// the primary source's record its values win and the incident's fill the
// gaps; for any other source the incident's values win and the record fills
// the gaps. Records that already carry an id (IL-JSON) are written as given.
func PlanImport(recs []Record, idx *Index) (*Plan, error) {
	p := &planner{idx: idx, work: map[string]*incidentlib.Incident{}, plan: &Plan{Merges: map[string]string{}}, next: idx.MaxID}
	for _, r := range recs {
		if r.Incident.ID != "" {
			if n, ok := incidentlib.ParseID(r.Incident.ID); ok && n > p.next {
				p.next = n
			}
		}
	}
	for _, r := range recs {
		if err := p.add(r); err != nil {
			return nil, err
		}
	}
	ids := make([]string, 0, len(p.work))
	for id := range p.work {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, _ := incidentlib.ParseID(ids[i])
		b, _ := incidentlib.ParseID(ids[j])
		return a < b
	})
	for _, id := range ids {
		if _, gone := p.plan.Merges[id]; !gone {
			p.plan.Upserts = append(p.plan.Upserts, p.work[id])
		}
	}
	return p.plan, nil
}

type planner struct {
	idx  *Index
	work map[string]*incidentlib.Incident // ids this import writes, current content
	plan *Plan
	next uint32
}

// get returns the working copy of incident id, loading it from the store.
func (p *planner) get(id string) (*incidentlib.Incident, error) {
	if inc, ok := p.work[id]; ok {
		return inc, nil
	}
	got, err := p.idx.Load([]string{id})
	if err != nil {
		return nil, err
	}
	if got[0] == nil {
		return nil, nil
	}
	c := clone(got[0])
	p.work[id] = c
	return c, nil
}

func (p *planner) resolve(id string) string {
	for i := 0; i < 100; i++ {
		to, ok := p.plan.Merges[id]
		if !ok {
			return id
		}
		id = to
	}
	return id
}

func (p *planner) add(r Record) error {
	inc := clone(r.Incident)
	if inc.ID != "" { // IL-JSON: written as given
		if _, ok := p.work[inc.ID]; !ok {
			if _, err := p.get(inc.ID); err != nil {
				return err
			}
		}
		action := ActionCreate
		if p.work[inc.ID] != nil {
			action = ActionUpdate
		}
		p.work[inc.ID] = inc
		p.register(inc)
		p.plan.Outcomes = append(p.plan.Outcomes, Outcome{Where: r.Where, Key: r.SourceKey, ID: inc.ID, Action: action})
		return nil
	}
	byKey := p.resolve(p.idx.BySourceKey[r.SourceKey])
	// Other incidents citing one of the record's URLs are the same postmortem.
	var byURL []string
	for _, s := range inc.Sources {
		if id := p.resolve(p.idx.ByURL[NormalizeURL(s.URL)]); id != "" && id != byKey && !slices.Contains(byURL, id) {
			byURL = append(byURL, id)
		}
	}
	setExtra(inc, ExtraSourceKey, r.SourceKey)
	var target string
	var action Action
	switch {
	case byKey != "":
		target, action = byKey, ActionUpdate
	case len(byURL) > 0:
		target, action, byURL = byURL[0], ActionMerge, byURL[1:]
	default:
		p.next++
		if p.next == 0 {
			return fmt.Errorf("no incident ids left")
		}
		target, action = incidentlib.FormatID(p.next), ActionCreate
	}
	for _, other := range byURL {
		if err := p.mergeInto(target, other); err != nil {
			return err
		}
		action = ActionMerge
	}
	cur, err := p.get(target)
	if err != nil {
		return err
	}
	inc.ID = target
	switch {
	case cur == nil:
		p.work[target] = inc
	case primaryKey(cur) == r.SourceKey:
		fill(inc, cur)
		for _, k := range []string{ExtraMergedSources, ExtraMergedIDs} {
			if v, ok := cur.Extra[k]; ok {
				inc.Extra[k] = v
			}
		}
		p.work[target] = inc
	default:
		addMergedSource(cur, inc)
		fill(cur, inc)
	}
	p.register(p.work[target])
	p.plan.Outcomes = append(p.plan.Outcomes, Outcome{Where: r.Where, Key: r.SourceKey, ID: target, Action: action})
	return nil
}

// mergeInto merges incident drop into incident keep and records the merge.
func (p *planner) mergeInto(keep, drop string) error {
	k, err := p.get(keep)
	if err != nil {
		return err
	}
	d, err := p.get(drop)
	if err != nil || d == nil || k == nil {
		return err
	}
	addMergedSource(k, d)
	for _, m := range mergedSources(d) {
		addMergedEntry(k, m)
	}
	fill(k, d)
	ids := append(stringList(k.Extra[ExtraMergedIDs]), drop)
	ids = append(ids, stringList(d.Extra[ExtraMergedIDs])...)
	sort.Strings(ids)
	setExtra(k, ExtraMergedIDs, slices.Compact(ids))
	p.plan.Merges[drop] = keep
	for from, to := range p.plan.Merges {
		if to == drop {
			p.plan.Merges[from] = keep
		}
	}
	p.register(k)
	return nil
}

func (p *planner) register(inc *incidentlib.Incident) {
	for _, k := range sourceKeys(inc) {
		p.idx.BySourceKey[k] = inc.ID
	}
	for _, s := range inc.Sources {
		if u := NormalizeURL(s.URL); u != "" {
			if cur := p.resolve(p.idx.ByURL[u]); cur == "" || cur == inc.ID {
				p.idx.ByURL[u] = inc.ID
			}
		}
	}
}

func primaryKey(inc *incidentlib.Incident) string {
	var s string
	if raw, ok := inc.Extra[ExtraSourceKey]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// MergedSource is another collection's record merged into an incident.
type MergedSource struct {
	SourceKey   string `json:"source_key"`
	Licence     string `json:"licence,omitempty"`
	Attribution string `json:"attribution,omitempty"`
}

func mergedSources(inc *incidentlib.Incident) []MergedSource {
	var m []MergedSource
	if raw, ok := inc.Extra[ExtraMergedSources]; ok {
		_ = json.Unmarshal(raw, &m)
	}
	return m
}

func sourceKeys(inc *incidentlib.Incident) []string {
	var keys []string
	if k := primaryKey(inc); k != "" {
		keys = append(keys, k)
	}
	for _, m := range mergedSources(inc) {
		keys = append(keys, m.SourceKey)
	}
	return keys
}

func extraString(inc *incidentlib.Incident, name string) string {
	var s string
	if raw, ok := inc.Extra[name]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// addMergedSource records src (another source's record) on dst.
func addMergedSource(dst, src *incidentlib.Incident) {
	key := primaryKey(src)
	if key == "" || key == primaryKey(dst) {
		return
	}
	addMergedEntry(dst, MergedSource{SourceKey: key, Licence: extraString(src, "licence"), Attribution: extraString(src, "attribution")})
}

func addMergedEntry(dst *incidentlib.Incident, m MergedSource) {
	if m.SourceKey == primaryKey(dst) {
		return
	}
	list := mergedSources(dst)
	for i, x := range list {
		if x.SourceKey == m.SourceKey {
			list[i] = m
			setExtra(dst, ExtraMergedSources, list)
			return
		}
	}
	list = append(list, m)
	sort.Slice(list, func(i, j int) bool { return list[i].SourceKey < list[j].SourceKey })
	setExtra(dst, ExtraMergedSources, list)
}

func stringList(raw json.RawMessage) []string {
	var s []string
	_ = json.Unmarshal(raw, &s)
	return s
}

// clone deep-copies a record through its canonical JSON.
func clone(inc *incidentlib.Incident) *incidentlib.Incident {
	b, err := json.Marshal(inc)
	if err != nil {
		panic(err)
	}
	var c incidentlib.Incident
	if err := json.Unmarshal(b, &c); err != nil {
		panic(err)
	}
	return &c
}

// fill sets every empty field of dst from src, adds src's sources that dst
// lacks (by normalized URL) and its related links, and copies its unknown
// fields that dst does not have.
func fill(dst, src *incidentlib.Incident) {
	str := func(d *string, s string) {
		if *d == "" {
			*d = s
		}
	}
	text := func(d *incidentlib.Text, s incidentlib.Text) {
		str(&d.En, s.En)
		str(&d.Ko, s.Ko)
	}
	list := func(d *[]string, s []string) {
		if len(*d) == 0 && len(s) > 0 {
			*d = append([]string(nil), s...)
		}
	}
	if dst.Date == "" {
		dst.Date, dst.DateKind = src.Date, src.DateKind
	}
	text(&dst.Title, src.Title)
	text(&dst.Summary, src.Summary)
	text(&dst.Lessons, src.Lessons)
	text(&dst.Trigger, src.Trigger)
	text(&dst.Detection, src.Detection)
	text(&dst.SymptomsText, src.SymptomsText)
	list(&dst.Domain, src.Domain)
	list(&dst.Symptoms, src.Symptoms)
	list(&dst.Components, src.Components)
	list(&dst.Contributing, src.Contributing)
	str(&dst.RootCause, src.RootCause)
	if dst.Severity == "" || dst.Severity == "unknown" {
		if src.Severity != "" {
			dst.Severity = src.Severity
		}
	}
	str(&dst.Impact.Scope, src.Impact.Scope)
	str(&dst.Impact.Users, src.Impact.Users)
	str(&dst.Impact.Region, src.Impact.Region)
	str(&dst.Timeline.DetectedAfter, src.Timeline.DetectedAfter)
	str(&dst.Timeline.ResolvedAfter, src.Timeline.ResolvedAfter)
	if len(dst.Remediation) == 0 {
		dst.Remediation = src.Remediation
	}
	if len(dst.ActionItems) == 0 {
		dst.ActionItems = src.ActionItems
	}
	have := map[string]bool{}
	for _, s := range dst.Sources {
		have[NormalizeURL(s.URL)] = true
	}
	for _, s := range src.Sources {
		if u := NormalizeURL(s.URL); !have[u] {
			dst.Sources = append(dst.Sources, s)
			have[u] = true
		}
	}
	for _, r := range src.Related {
		if r != dst.ID && !slices.Contains(dst.Related, r) {
			dst.Related = append(dst.Related, r)
		}
	}
	str(&dst.RecurrenceOf, src.RecurrenceOf)
	if dst.RecurrenceOf == dst.ID {
		dst.RecurrenceOf = ""
	}
	if dst.Review.ReviewedAt == "" && src.Review.ReviewedAt != "" {
		dst.Review = src.Review
	}
	str(&dst.UpdatedAt, src.UpdatedAt)
	str(&dst.URL, src.URL)
	for k, v := range src.Extra {
		if _, ok := dst.Extra[k]; !ok && k != ExtraSourceKey && k != ExtraMergedSources && k != ExtraMergedIDs {
			if dst.Extra == nil {
				dst.Extra = incidentlib.Extra{}
			}
			dst.Extra[k] = v
		}
	}
}
