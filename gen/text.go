package gen

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A pair is a word or phrase in English and Korean.
type pair struct{ en, ko string }

// Vocabulary are technical words the texts are built from, in both languages,
// so that search has something to find. Some Korean forms keep the English
// word, as Korean engineers write them.
var Vocabulary = []pair{
	{"connection pool", "커넥션 풀"},
	{"leader election", "리더 선출"},
	{"cache", "캐시"},
	{"timeout", "타임아웃"},
	{"keepalive", "keepalive"},
	{"freelist", "freelist"},
	{"retry storm", "재시도 폭주"},
	{"thundering herd", "썬더링 허드"},
	{"rate limiter", "레이트 리미터"},
	{"load balancer", "로드 밸런서"},
	{"health check", "헬스 체크"},
	{"circuit breaker", "서킷 브레이커"},
	{"replication lag", "복제 지연"},
	{"write-ahead log", "WAL 로그"},
	{"garbage collection pause", "GC 멈춤"},
	{"memory leak", "메모리 누수"},
	{"disk space", "디스크 용량"},
	{"certificate rotation", "인증서 교체"},
	{"DNS resolution", "DNS 조회"},
	{"BGP route", "BGP 경로"},
	{"config push", "설정 배포"},
	{"feature flag", "기능 플래그"},
	{"schema migration", "스키마 마이그레이션"},
	{"index rebuild", "인덱스 재구축"},
	{"deadlock", "데드락"},
	{"lock contention", "락 경합"},
	{"queue backlog", "큐 적체"},
	{"consumer lag", "컨슈머 지연"},
	{"split brain", "스플릿 브레인"},
	{"quorum", "쿼럼"},
	{"failover", "페일오버"},
	{"canary deployment", "카나리 배포"},
	{"autoscaling", "오토스케일링"},
	{"file descriptor limit", "파일 디스크립터 한도"},
	{"thread pool", "스레드 풀"},
	{"TLS handshake", "TLS 핸드셰이크"},
	{"session store", "세션 저장소"},
	{"hot partition", "핫 파티션"},
	{"clock skew", "시계 오차"},
	{"leap second", "윤초"},
	{"integer overflow", "정수 오버플로"},
	{"backpressure", "백프레셔"},
	{"cold start", "콜드 스타트"},
	{"cache stampede", "캐시 스탬피드"},
	{"connection reset", "커넥션 리셋"},
	{"packet loss", "패킷 손실"},
	{"control plane", "컨트롤 플레인"},
	{"snapshot restore", "스냅샷 복구"},
	{"compaction", "컴팩션"},
	{"sharding", "샤딩"},
	{"read replica", "읽기 복제본"},
	{"message queue", "메시지 큐"},
	{"service mesh", "서비스 메시"},
	{"sidecar proxy", "사이드카 프록시"},
	{"cron job", "크론 작업"},
	{"batch job", "배치 작업"},
	{"streaming", "streaming"},
	{"long polling", "롱 폴링"},
}

// Products are names of software that appear unchanged in both languages,
// often mixed into Korean text ("Consul 클러스터").
var Products = []string{
	"Consul", "etcd", "ZooKeeper", "Redis", "Memcached", "Kafka", "RabbitMQ",
	"PostgreSQL", "MySQL", "MongoDB", "Cassandra", "Elasticsearch", "nginx",
	"HAProxy", "Envoy", "Kubernetes", "Nomad", "Vault", "BoltDB", "RocksDB",
	"CockroachDB", "gRPC", "Istio", "Ceph",
}

var regions = []pair{
	{"us-east-1", "us-east-1"}, {"eu-west-1", "eu-west-1"}, {"ap-northeast-2", "ap-northeast-2"},
	{"Europe", "유럽"}, {"Seoul", "서울"}, {"Tokyo", "도쿄"}, {"North America", "북미"},
	{"all regions", "전 리전"}, {"Asia Pacific", "아시아 태평양"}, {"Frankfurt", "프랑크푸르트"},
	{"Virginia", "버지니아"}, {"Singapore", "싱가포르"},
}

var reviewers = []string{
	"Minji Kim", "Jisoo Park", "Alex Chen", "Sam Rivera", "Hyunwoo Lee",
	"Priya Nair", "Daniel Cho", "Yuna Choi", "Tom Becker", "Seojin Han",
}

// slot is a placeholder of a template.
type slot int8

const (
	sOrg slot = iota
	sDom
	sSym
	sSym2
	sComp
	sComp2
	sRC
	sCon
	sSev
	sW1
	sW2
	sW3
	sP1
	sP2
	sN
	sPct
	sMs
	sDur
	sDet
	sRegion
	sWhen
	numSlots
)

var slotNames = map[string]slot{
	"org": sOrg, "dom": sDom, "sym": sSym, "sym2": sSym2, "comp": sComp, "comp2": sComp2,
	"rc": sRC, "con": sCon, "sev": sSev, "w1": sW1, "w2": sW2, "w3": sW3, "p1": sP1, "p2": sP2,
	"n": sN, "pct": sPct, "ms": sMs, "dur": sDur, "det": sDet, "region": sRegion, "when": sWhen,
}

// needs are the optional slots a template uses; a template is chosen only
// for records that have them.
const (
	needSym2 uint8 = 1 << iota
	needComp2
	needCon
)

// josa is a Korean particle attached to a slot, "{comp:이}".
type josa struct {
	withFinal, without string // after a syllable with / without a final consonant
	ro                 bool   // 으로/로: ㄹ counts as no final consonant
}

var josaForms = map[string]josa{
	"이": {"이", "가", false}, "가": {"이", "가", false},
	"은": {"은", "는", false}, "는": {"은", "는", false},
	"을": {"을", "를", false}, "를": {"을", "를", false},
	"과": {"과", "와", false}, "와": {"과", "와", false},
	"으로": {"으로", "로", true}, "로": {"으로", "로", true},
	"이었다": {"이었다", "였다", false},
}

type seg struct {
	lit   string // literal text before the slot
	slot  slot   // -1 for none
	josa  josa   // particle after the slot, when fixed == "" and alternating
	fixed string // particle that does not alternate (에서, 의, 에 ...)
	hasJ  bool
}

type tmpl struct {
	segs  []seg
	needs uint8
}

// tpair is a template in English and Korean with the same slots.
type tpair struct {
	en, ko tmpl
	needs  uint8
}

func compile(s string) tmpl {
	var t tmpl
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			if s != "" {
				t.segs = append(t.segs, seg{lit: s, slot: -1})
			}
			return t
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			panic("gen: unclosed slot in template " + s)
		}
		name := s[i+1 : i+j]
		sg := seg{lit: s[:i]}
		if k := strings.IndexByte(name, ':'); k >= 0 {
			p := name[k+1:]
			name = name[:k]
			if jf, ok := josaForms[p]; ok {
				sg.josa, sg.hasJ = jf, true
			} else {
				sg.fixed = p
			}
		}
		sl, ok := slotNames[name]
		if !ok {
			panic(fmt.Sprintf("gen: unknown slot %q in template %s", name, s))
		}
		sg.slot = sl
		switch sl {
		case sSym2:
			t.needs |= needSym2
		case sComp2:
			t.needs |= needComp2
		case sCon:
			t.needs |= needCon
		}
		t.segs = append(t.segs, sg)
		s = s[i+j+1:]
	}
}

func pairs(ts ...string) []tpair {
	if len(ts)%2 != 0 {
		panic("gen: templates come in pairs")
	}
	out := make([]tpair, 0, len(ts)/2)
	for i := 0; i < len(ts); i += 2 {
		en, ko := compile(ts[i]), compile(ts[i+1])
		out = append(out, tpair{en: en, ko: ko, needs: en.needs | ko.needs})
	}
	return out
}

// Templates. English sentences never start with a slot other than {org} or
// {when}, so capitalization needs no fixing. Korean particles after a slot
// are written {slot:이} and follow the slot's last syllable.
var (
	titleT = pairs(
		"{org} outage: {sym} in {comp} caused by {rc}",
		"{org} 장애: {rc:으로} {comp:에서} {sym:이} 발생했다",
		"{p1} {w1} problem at {org} led to {sym} for {dur}",
		"{org:의} {p1} {w1} 문제로 {dur} 동안 {sym:이} 이어졌다",
		"{org}: {w1} problem in {comp} caused {sym}",
		"{org}: {comp:의} {w1} 문제로 {sym} 발생",
		"How {rc} took down {comp} at {org}",
		"{rc:이} {org:의} {comp:을} 멈춘 과정",
		"{org} {dom} incident: {sym} and {sym2} after {w1} changes",
		"{org} {dom} 사고: {w1} 변경 뒤 {sym:과} {sym2}",
		"{org} {comp} degraded for {dur} after {p1} {w1} failure",
		"{org} {comp:이} {p1} {w1} 실패로 {dur} 동안 저하됐다",
	)
	openerT = pairs(
		"{when}, {org} had an incident in its {dom} stack, rated {sev}: {sym} affected {pct}% of requests in {region}.",
		"{when} {org:의} {dom} 영역에서 사고가 일어나 {region} 요청의 {pct}%에 {sym:이} 나타났다. 심각도는 {sev:이었다}.",
		"{org} runs {comp} on {p1} across {n} nodes, and {w1} trouble there caused {sym} {when}.",
		"{org:은} {n}대 노드의 {p1} 위에서 {comp:을} 운영하는데, {when} 그곳의 {w1} 문제로 {sym:이} 발생했다.",
		"{when}, users of {org} saw {sym} while {comp} struggled with its {w1}.",
		"{when} {org} 사용자들은 {comp:이} {w1} 문제를 겪는 동안 {sym:을} 겪었다.",
	)
	middleT = pairs(
		"The root cause was {rc}: the {w1} in {p1} interacted badly with the {w2} of {comp}.",
		"근본 원인은 {rc:이었다}. {p1:의} {w1:이} {comp:의} {w2:과} 나쁘게 맞물렸다.",
		"Requests to {comp} started to time out after {ms} ms, and client retries turned into a retry storm.",
		"{comp} 요청이 {ms}ms 뒤 타임아웃되기 시작했고, 클라이언트 재시도가 재시도 폭주로 번졌다.",
		"Engineers first suspected the {w2}, then found that the {w1} on {p1} had grown without bound.",
		"엔지니어들은 처음에 {w2:을} 의심했지만 곧 {p1:의} {w1:이} 끝없이 커진 것을 찾았다.",
		"Because of {con}, the failure spread from {comp} to {comp2}.",
		"{con} 탓에 장애가 {comp:에서} {comp2:으로} 번졌다.",
		"Monitoring showed {sym2} only {n} minutes later, which delayed the response.",
		"모니터링에는 {n}분 뒤에야 {sym2:이} 보여 대응이 늦어졌다.",
		"The team disabled the {w1}, drained traffic from {region}, and restarted {p1} node by node.",
		"팀은 {w1:을} 끄고 {region} 트래픽을 빼낸 뒤 {p1} 노드를 하나씩 다시 시작했다.",
		"A {w2} change had rolled out to {pct}% of the fleet just before the incident.",
		"사고 직전에 {w2} 변경이 전체 서버의 {pct}%에 배포됐다.",
		"The {p2} clients kept reconnecting through the {w3}, which doubled the load on {comp}.",
		"{p2} 클라이언트가 {w3:을} 거쳐 계속 다시 연결하면서 {comp:의} 부하가 두 배로 늘었다.",
		"The {comp} and the {comp2} shared one {p1} cluster, so the {w2} problem hit both.",
		"{comp:과} {comp2:이} {p1} 클러스터 하나를 함께 써서 {w2} 문제가 둘 다에 번졌다.",
	)
	closerT = pairs(
		"Service was fully restored after {dur}, and no data was lost.",
		"서비스는 {dur} 만에 완전히 복구됐고 데이터 손실은 없었다.",
		"{org} restored service after {dur} and published a postmortem with follow-up actions.",
		"{org:은} {dur} 만에 서비스를 복구하고 후속 조치와 함께 포스트모템을 공개했다.",
		"Full recovery took {dur}; some {w3} entries had to be replayed.",
		"완전 복구에 {dur:이} 걸렸고 일부 {w3} 항목은 다시 처리해야 했다.",
	)
	lessonT = pairs(
		"A single {comp} was a single point of failure, and {w1} limits must be tested under real load.",
		"{comp} 하나가 단일 장애 지점이었고, {w1} 한도는 실제 부하에서 시험해야 한다.",
		"Monitoring that depends on {p1} cannot diagnose an outage of {p1}.",
		"{p1:에} 기대는 모니터링으로는 {p1} 장애를 진단할 수 없다.",
		"Changes to the {w2} should go through a canary deployment before they reach every region.",
		"{w2} 변경은 모든 리전에 닿기 전에 카나리 배포를 거쳐야 한다.",
		"Alerts on {sym} catch {rc} sooner than dashboards do.",
		"{rc:은} 대시보드보다 {sym} 알림으로 더 빨리 잡힌다.",
		"Timeouts and retries between {comp} and {comp2} need budgets, or a retry storm follows.",
		"{comp:과} {comp2} 사이의 타임아웃과 재시도에는 예산이 필요하며, 그렇지 않으면 재시도 폭주가 따른다.",
	)
	triggerT = pairs(
		"A routine {w1} change to {p1} was deployed in {region}.",
		"{region:의} {p1:에} 일상적인 {w1} 변경이 배포됐다.",
		"Traffic grew by {pct}% in a few minutes and the {w2} of {comp} could not keep up.",
		"몇 분 사이 트래픽이 {pct}% 늘어 {comp:의} {w2:이} 따라가지 못했다.",
		"An expired certificate on {comp} broke the TLS handshake with {p2}.",
		"{comp:의} 인증서가 만료되어 {p2:과}의 TLS 핸드셰이크가 깨졌다.",
		"A {w1} job started at the same time as maintenance on {p1}.",
		"{p1} 점검과 같은 때에 {w1} 작업이 시작됐다.",
	)
	detectionT = pairs(
		"An automated alert on {sym} paged the on-call engineer after {det}.",
		"{det} 뒤 {sym} 자동 알림이 온콜 엔지니어를 호출했다.",
		"Customers reported {sym} on social media before internal monitoring noticed.",
		"내부 모니터링보다 먼저 고객들이 소셜 미디어에 {sym:을} 알렸다.",
		"Dashboards for {comp} showed the {w1} climbing to {pct}% of capacity.",
		"{comp} 대시보드에서 {w1:이} 용량의 {pct}%까지 오르는 것이 보였다.",
	)
	symptomsT = pairs(
		"Users saw {sym}, and requests to {comp} took more than {ms} ms.",
		"사용자는 {sym:을} 겪었고 {comp} 요청은 {ms}ms 넘게 걸렸다.",
		"Error rates rose to {pct}% with {sym} and {sym2} across {region}.",
		"{region} 전반에서 {sym:과} {sym2:이} 나타나며 오류율이 {pct}%까지 올랐다.",
		"Logs of {p1} filled with {w1} errors while clients reported {sym}.",
		"클라이언트가 {sym:을} 보고하는 동안 {p1} 로그는 {w1} 오류로 가득 찼다.",
	)
	remediationT = pairs(
		"Restarted {p1} nodes one at a time",
		"{p1} 노드를 하나씩 다시 시작했다.",
		"Rolled back the {w1} change",
		"{w1} 변경을 롤백했다.",
		"Failed over {comp} to a standby in another region",
		"{comp:을} 다른 리전의 대기 시스템으로 페일오버했다.",
		"Raised the {w2} limit on {comp}",
		"{comp:의} {w2} 한도를 올렸다.",
		"Disabled the {w1} for all clients",
		"모든 클라이언트에서 {w1:을} 껐다.",
		"Drained traffic from {region}",
		"{region:의} 트래픽을 빼냈다.",
	)
	actionT = pairs(
		"Add alerts on the {w1} of {comp}",
		"{comp:의} {w1:에} 대한 알림을 추가한다.",
		"Split the {p1} cluster by workload",
		"{p1} 클러스터를 워크로드별로 나눈다.",
		"Load test {comp} with {n}x current traffic",
		"현재 트래픽의 {n}배로 {comp} 부하 시험을 한다.",
		"Write a runbook for {sym}",
		"{sym:에} 대한 런북을 작성한다.",
		"Add a circuit breaker between {comp} and {comp2}",
		"{comp:과} {comp2} 사이에 서킷 브레이커를 둔다.",
		"Move monitoring off {p1}",
		"모니터링을 {p1:에서} 분리한다.",
	)
)

// textCtx holds the values of the slots for one record, by language.
type textCtx struct {
	v     [numSlots][2]string
	whenL string // English {when} inside a sentence: "on 28 October 2021"
	has   uint8  // needs the record satisfies
}

const (
	en = 0
	ko = 1
)

// expand appends template t in lang with the values of c to buf.
func (c *textCtx) expand(buf []byte, t *tmpl, lang int) []byte {
	for i := range t.segs {
		sg := &t.segs[i]
		buf = append(buf, sg.lit...)
		if sg.slot < 0 {
			continue
		}
		var w string
		if sg.slot == sWhen && lang == en && (i > 0 || sg.lit != "") {
			w = c.whenL
		} else {
			w = c.v[sg.slot][lang]
		}
		buf = append(buf, w...)
		if lang != ko || (!sg.hasJ && sg.fixed == "") {
			continue
		}
		final, rieul, hangul := finalConsonant(w)
		if !hangul {
			buf = append(buf, ' ')
		}
		switch {
		case sg.fixed != "":
			buf = append(buf, sg.fixed...)
		case final && !(sg.josa.ro && rieul):
			buf = append(buf, sg.josa.withFinal...)
		default:
			buf = append(buf, sg.josa.without...)
		}
	}
	return buf
}

// finalConsonant reports whether the word, read aloud in Korean, ends with a
// final consonant (batchim), whether that consonant is ㄹ, and whether the
// word ends with a Hangul syllable. For Latin words and digits it guesses
// from the usual Korean reading ("Consul" 콘술 -> yes, "Redis" 레디스 -> no,
// "SQL" 에스큐엘 -> yes, ㄹ).
func finalConsonant(w string) (final, rieul, hangul bool) {
	r, size := utf8.DecodeLastRuneInString(w)
	if size == 0 {
		return false, false, false
	}
	if 0xAC00 <= r && r <= 0xD7A3 {
		f := (r - 0xAC00) % 28
		return f != 0, f == 8, true
	}
	if r == ')' {
		// "SEV2 (중대)" is read up to the closing parenthesis.
		final, rieul, _ = finalConsonant(strings.TrimRight(w, ") "))
		return final, rieul, false
	}
	switch {
	case '0' <= r && r <= '9':
		// 영 일 이 삼 사 오 육 칠 팔 구
		f := [10]bool{true, true, false, true, false, false, true, true, true, false}[r-'0']
		return f, r == '1' || r == '7' || r == '8', false
	case 'A' <= r && r <= 'Z':
		prev, _ := utf8.DecodeLastRuneInString(w[:len(w)-size])
		if 'a' <= prev && prev <= 'z' {
			r += 'a' - 'A' // a word ending in a capital, read as a word
			break
		}
		// An acronym: letters read by name; L 엘, M 엠, N 엔, R 알.
		return r == 'L' || r == 'M' || r == 'N' || r == 'R', r == 'L' || r == 'R', false
	}
	switch r {
	case 'l':
		return true, true, false
	case 'm', 'n', 'k':
		return true, false, false
	case 'g':
		prev, _ := utf8.DecodeLastRuneInString(w[:len(w)-1])
		return prev == 'n', false, false
	}
	return false, false, false
}

// lowerFirst lowercases the first letter of a label used inside an English
// sentence, unless it starts an acronym ("High latency" -> "high latency",
// "DNS failure" stays).
func lowerFirst(s string) string {
	if len(s) >= 2 && 'A' <= s[0] && s[0] <= 'Z' && 'a' <= s[1] && s[1] <= 'z' {
		return string(s[0]+'a'-'A') + s[1:]
	}
	return s
}

var monthsEn = [12]string{"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}

// durText renders minutes as text: "3 hours", "45 minutes", "2 hours 30 minutes".
func durText(min int) pair {
	if min <= 0 {
		return pair{"several hours", "몇 시간"}
	}
	h, m := min/60, min%60
	switch {
	case h == 0:
		return pair{plural(m, "minute"), fmt.Sprintf("%d분", m)}
	case m == 0 && h%24 == 0 && h >= 48:
		return pair{plural(h/24, "day"), fmt.Sprintf("%d일", h/24)}
	case m == 0:
		return pair{plural(h, "hour"), fmt.Sprintf("%d시간", h)}
	}
	return pair{plural(h, "hour") + " " + plural(m, "minute"), fmt.Sprintf("%d시간 %d분", h, m)}
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// durValue renders minutes as a timeline duration: "45m", "3h", "2h30m", "3d".
func durValue(min int) string {
	h, m := min/60, min%60
	switch {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m == 0 && h%24 == 0 && h >= 48:
		return fmt.Sprintf("%dd", h/24)
	case m == 0:
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
}
