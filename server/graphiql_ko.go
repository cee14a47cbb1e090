package server

// koreanIncidentExample is the Korean incident page: the incident page's
// query with lang: KO on every text (a request with Accept-Language: ko
// does the same), and where each text came from (textOrigin: the DFDS
// records' Korean is a machine translation).
var koreanIncidentExample = ExampleTab{Query: `# 한국어 사건 페이지: 모든 텍스트에 lang: KO (Accept-Language: ko 헤더도 같다).
# textOrigin 은 그 언어의 텍스트가 어디서 왔는지 알려 준다 (MACHINE_TRANSLATION: 기계 번역).
query IncidentPageKo($id: ID!, $lang: Lang = KO) {
  incident(id: $id) {
    id date
    title(lang: $lang)
    summary(lang: $lang)
    lessons(lang: $lang)
    textOrigin(lang: $lang)
    organization { name }
    domains { label(lang: $lang) }
    symptoms { label(lang: $lang) }
    rootCause { label(lang: $lang) }
    actionItems { text(lang: $lang) }
    related { id title(lang: $lang) }
    recurrenceOf { id title(lang: $lang) }
  }
}
`, Variables: `{"id": "IL-0301", "lang": "KO"}`}
