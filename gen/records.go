package gen

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/incidentlib/incidentlib"
)

// The records themselves: dates, texts, items and sources written from
// the drawn shape and terms.

var dateStrings = func() []string {
	out := make([]string, numDays)
	for d := range out {
		out[d] = firstDate.AddDate(0, 0, d).Format(time.DateOnly)
	}
	return out
}()

// record writes the fields of incident i, but for related, into inc,
// drawing from r (the text stream, drawn in record order); c and buf are
// scratch space, and the grown buf is returned.
func (g *generator) record(i int, inc *incidentlib.Incident, r *rand.Rand, c *textCtx, buf []byte) []byte {
	{
		o := Orgs[g.org[i]]
		t := &g.tm[i]
		inc.ID = g.id(i)
		inc.Org, inc.OrgSlug = o.Name, o.Slug
		if d := g.day[i]; d >= 0 {
			inc.Date, inc.DateKind = dateStrings[d], "incident"
		}
		kd := &g.kinds
		inc.Domain = kd[kDomain].slugs(t.dom)
		inc.Symptoms = kd[kSymptom].slugs(t.sym)
		inc.Components = kd[kComponent].slugs(t.comp)
		inc.Contributing = kd[kContributing].slugs(t.con)
		inc.RootCause = kd[kRootCause].slug(t.rc)
		inc.Severity = kd[kSeverity].slug(t.sev)
		if p := g.rec[i]; p >= 0 {
			inc.RecurrenceOf = g.id(p)
		}
		inc.URL = CaseURLPrefix + inc.ID

		// Timeline.
		resolved, detected := 0, 0
		if r.Float64() >= 0.10 {
			resolved = resolvedMinutes(r)
			inc.Timeline.ResolvedAfter = durValue(resolved)
		}
		if r.Float64() >= 0.25 {
			detected = detectedMinutes(r)
			inc.Timeline.DetectedAfter = durValue(detected)
		}

		// Slot values.
		c.has = 0
		c.v[sOrg] = [2]string{o.Name, o.Name}
		c.v[sDom] = kd[kDomain].label(t.dom, 0, pair{"production", "운영"})
		c.v[sSym] = kd[kSymptom].label(t.sym, 0, pair{"errors", "오류"})
		c.v[sComp] = kd[kComponent].label(t.comp, 0, pair{"backend", "백엔드"})
		if len(t.sym) > 1 {
			c.v[sSym2] = kd[kSymptom].label(t.sym, 1, pair{})
			c.has |= needSym2
		}
		if len(t.comp) > 1 {
			c.v[sComp2] = kd[kComponent].label(t.comp, 1, pair{})
			c.has |= needComp2
		}
		if len(t.con) > 0 {
			c.v[sCon] = kd[kContributing].label(t.con, 0, pair{})
			c.has |= needCon
		}
		if t.rc >= 0 {
			c.v[sRC] = [2]string{kd[kRootCause].en[t.rc], kd[kRootCause].ko[t.rc]}
		} else {
			c.v[sRC] = [2]string{"an unknown cause", "알 수 없는 원인"}
		}
		if t.sev >= 0 {
			c.v[sSev] = [2]string{kd[kSeverity].en[t.sev], kd[kSeverity].ko[t.sev]}
		} else {
			c.v[sSev] = [2]string{"unknown", "미상"}
		}
		w := pickDistinct(r, len(Vocabulary), 3)
		for n, s := range [3]slot{sW1, sW2, sW3} {
			c.v[s] = [2]string{Vocabulary[w[n]].en, Vocabulary[w[n]].ko}
		}
		p := pickDistinct(r, len(Products), 2)
		c.v[sP1] = [2]string{Products[p[0]], Products[p[0]]}
		c.v[sP2] = [2]string{Products[p[1]], Products[p[1]]}
		n := strconv.Itoa(2 + r.IntN(63))
		c.v[sN] = [2]string{n, n}
		pct := strconv.Itoa(3 + r.IntN(95))
		c.v[sPct] = [2]string{pct, pct}
		ms := strconv.Itoa([...]int{200, 300, 500, 800, 1000, 1500, 2000, 5000, 10000, 30000}[r.IntN(10)])
		c.v[sMs] = [2]string{ms, ms}
		dur := durText(resolved)
		c.v[sDur] = [2]string{dur.en, dur.ko}
		det := pair{"a few minutes", "몇 분"}
		if detected > 0 {
			det = durText(detected)
		}
		c.v[sDet] = [2]string{det.en, det.ko}
		reg := regions[r.IntN(len(regions))]
		c.v[sRegion] = [2]string{reg.en, reg.ko}
		if d := g.day[i]; d >= 0 {
			tm := firstDate.AddDate(0, 0, d)
			day := strconv.Itoa(tm.Day()) + " " + monthsEn[tm.Month()-1] + " " + strconv.Itoa(tm.Year())
			c.v[sWhen] = [2]string{"On " + day, strconv.Itoa(tm.Year()) + "년 " + strconv.Itoa(int(tm.Month())) + "월 " + strconv.Itoa(tm.Day()) + "일"}
			c.whenL = "on " + day
		} else {
			c.v[sWhen] = [2]string{"On an unrecorded day", "어느 날"}
			c.whenL = "on an unrecorded day"
		}

		// Texts.
		var ln lang
		switch u := r.Float64(); {
		case u < EnglishOnly:
			ln = langEn
		case u < EnglishOnly+KoreanOnly:
			ln = langKo
		}
		text := func(ts ...*tpair) incidentlib.Text {
			var out incidentlib.Text
			for l := range 2 {
				if (l == en && ln == langKo) || (l == ko && ln == langEn) {
					continue
				}
				buf = buf[:0]
				for n, tp := range ts {
					if n > 0 {
						buf = append(buf, ' ')
					}
					if l == en {
						buf = c.expand(buf, &tp.en, en)
					} else {
						buf = c.expand(buf, &tp.ko, ko)
					}
				}
				if l == en {
					out.En = string(buf)
				} else {
					out.Ko = string(buf)
				}
			}
			return out
		}
		inc.Title = text(c.pick(r, titleT))
		inc.Title.En = clip(inc.Title.En, MaxTitleRunes)
		inc.Title.Ko = clip(inc.Title.Ko, MaxTitleRunes)
		// The summary is an opener, one to three middle sentences and a
		// closer, with more middle sentences while the English is short.
		sum := []*tpair{c.pick(r, openerT)}
		for range 1 + r.IntN(3) {
			sum = c.addMiddle(r, sum)
		}
		sum = append(sum, c.pick(r, closerT))
		inc.Summary = text(sum...)
		for inc.Summary.En != "" && utf8.RuneCountInString(inc.Summary.En) < MinSummaryRunes && len(sum) < 7 {
			sum = append(c.addMiddle(r, sum[:len(sum)-1]), sum[len(sum)-1])
			inc.Summary = text(sum...)
		}
		if r.Float64() >= 0.08 {
			inc.Lessons = text(c.pick(r, lessonT))
		}
		if r.Float64() >= 0.10 {
			inc.Trigger = text(c.pick(r, triggerT))
		}
		if r.Float64() >= 0.15 {
			inc.Detection = text(c.pick(r, detectionT))
		}
		if r.Float64() >= 0.10 {
			inc.SymptomsText = text(c.pick(r, symptomsT))
		}
		inc.Remediation = c.items(r, remediationT, itemCount.pick(r), text)
		inc.ActionItems = c.items(r, actionT, itemCount.pick(r), text)

		// Impact, in English unless the record is Korean only.
		il := en
		if ln == langKo {
			il = ko
		}
		imp := func(ts []tpair) string {
			tp := c.pick(r, ts)
			if il == en {
				buf = c.expand(buf[:0], &tp.en, en)
			} else {
				buf = c.expand(buf[:0], &tp.ko, ko)
			}
			return string(buf)
		}
		if r.Float64() >= 0.08 {
			inc.Impact.Scope = imp(scopeT)
		}
		if r.Float64() >= 0.15 {
			inc.Impact.Users = imp(usersT)
		}
		if r.Float64() >= 0.10 {
			inc.Impact.Region = reg.en
			if il == ko {
				inc.Impact.Region = reg.ko
			}
		}

		// Times.
		lo := updatedMin
		if d := g.day[i]; d >= 0 {
			lo = max(lo, firstDate.Unix()+int64(d+1)*86400)
		}
		updated := lo + r.Int64N(updatedMax-lo+1)
		inc.UpdatedAt = time.Unix(updated, 0).UTC().Format(time.RFC3339)
		inc.Review.WrittenBy = WrittenBy
		if r.Float64() < ReviewedShare {
			rlo := max(lo, updated-180*86400)
			inc.Review.ReviewedAt = time.Unix(rlo+r.Int64N(updated-rlo+1), 0).UTC().Format(time.RFC3339)
			inc.Review.ReviewedBy = reviewers[r.IntN(len(reviewers))]
		}

		inc.Sources = g.sources(r, i, o, lo)
	}
	return buf
}

// addMiddle appends a middle sentence the summary does not have yet.
func (c *textCtx) addMiddle(r *rand.Rand, sum []*tpair) []*tpair {
	for {
		tp := c.pick(r, middleT)
		if !slices.Contains(sum, tp) {
			return append(sum, tp)
		}
	}
}

// pick draws a template whose optional slots the record has.
func (c *textCtx) pick(r *rand.Rand, ts []tpair) *tpair {
	for {
		tp := &ts[r.IntN(len(ts))]
		if tp.needs&^c.has == 0 {
			return tp
		}
	}
}

func (c *textCtx) items(r *rand.Rand, ts []tpair, k int, text func(...*tpair) incidentlib.Text) []incidentlib.Item {
	if k == 0 {
		return nil
	}
	var used []*tpair
	out := make([]incidentlib.Item, 0, k)
	for tries := 0; len(out) < k && tries < 20; tries++ {
		tp := c.pick(r, ts)
		if slices.Contains(used, tp) {
			continue
		}
		used = append(used, tp)
		out = append(out, incidentlib.Item{Text: text(tp)})
	}
	return out
}

var (
	scopeT = pairs(
		"{pct}% of requests to {comp} failed",
		"{comp} 요청의 {pct}%가 실패했다",
		"{org} was fully down for {dur}",
		"{org:이} {dur} 동안 완전히 멈췄다",
		"Degraded {dom} features, with {sym} for some customers",
		"{dom} 기능이 저하되어 일부 고객이 {sym:을} 겪었다",
	)
	usersT = pairs(
		"{org} customers in {region}",
		"{region:의} {org} 고객",
		"Developers using the {org} API",
		"{org} API 를 쓰는 개발자",
		"About {n},000 users",
		"약 {n},000명의 사용자",
	)
)

func (g *generator) sources(r *rand.Rand, i int, o Org, lo int64) []incidentlib.Source {
	k := 1
	if r.Float64() < 0.35 {
		k = 2
	}
	out := make([]incidentlib.Source, 0, k)
	year := "2024"
	if d := g.day[i]; d >= 0 {
		year = dateStrings[d][:4]
	}
	num := strconv.Itoa(1000 + r.IntN(90000))
	var s incidentlib.Source
	switch r.IntN(3) {
	case 0:
		s = incidentlib.Source{URL: "https://status." + o.Slug + ".example/incidents/" + num, Kind: "status"}
	case 1:
		topic := "outage"
		if rc := g.tm[i].rc; rc >= 0 {
			topic = g.kinds[kRootCause].terms[rc].Slug
		}
		s = incidentlib.Source{URL: "https://blog." + o.Slug + ".example/" + year + "/" + topic + "-postmortem-" + num, Kind: "blog"}
	default:
		s = incidentlib.Source{URL: "https://engineering." + o.Slug + ".example/postmortems/" + num, Kind: "postmortem"}
	}
	out = append(out, s)
	if k == 2 {
		n2 := strconv.Itoa(100000 + r.IntN(900000))
		if r.IntN(2) == 0 {
			out = append(out, incidentlib.Source{URL: "https://news.example.com/" + year + "/" + o.Slug + "-outage-" + n2, Kind: "news"})
		} else {
			out = append(out, incidentlib.Source{URL: "https://forum." + o.Slug + ".example/t/" + n2, Kind: "forum"})
		}
	}
	for n := range out {
		if r.IntN(2) == 0 {
			at := time.Unix(lo+r.Int64N(updatedMax-lo+1), 0).UTC().Format("20060102150405")
			out[n].Archived = "https://web.archive.org/web/" + at + "/" + out[n].URL
		}
	}
	return out
}

// resolvedMinutes draws how long an incident took to resolve.
func resolvedMinutes(r *rand.Rand) int {
	switch u := r.Float64(); {
	case u < 0.35:
		return 5 * (1 + r.IntN(11)) // 5m..55m
	case u < 0.75:
		if r.IntN(2) == 0 {
			return 60 * (1 + r.IntN(12)) // 1h..12h
		}
		return 60*(1+r.IntN(11)) + 15*(1+r.IntN(3)) // 1h15m..11h45m
	case u < 0.95:
		return 60 * (12 + r.IntN(61)) // 12h..72h
	default:
		return 24 * 60 * (3 + r.IntN(5)) // 3d..7d
	}
}

// detectedMinutes draws how long an incident took to detect.
func detectedMinutes(r *rand.Rand) int {
	switch u := r.Float64(); {
	case u < 0.5:
		return 1 + r.IntN(10)
	case u < 0.85:
		return 5 * (2 + r.IntN(11))
	default:
		return 60 * (1 + r.IntN(6))
	}
}

// clip shortens s to at most n characters at a word boundary.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)[:n-1]
	cut := len(rs)
	for j := len(rs) - 1; j > n/2; j-- {
		if rs[j] == ' ' {
			cut = j
			break
		}
	}
	return strings.TrimRight(string(rs[:cut]), " ,:;") + "…"
}
