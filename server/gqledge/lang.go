package gqledge

import (
	"errors"
	"net/http"
	"strings"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/graph"
)

// withLang sets the request's default language from Accept-Language.
func withLang(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := r.Header.Get("Accept-Language"); h != "" {
			r = r.WithContext(graph.WithLang(r.Context(), ParseAcceptLanguage(h)))
		}
		next.ServeHTTP(w, r)
	})
}

// ParseAcceptLanguage picks English or Korean from an Accept-Language
// header by quality; English when neither is named.
func ParseAcceptLanguage(h string) incidentlib.Lang {
	best, bestQ := incidentlib.LangEn, -1.0
	for _, part := range strings.Split(h, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := parseQ(v); err == nil {
				q = f
			}
		}
		primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
		var l incidentlib.Lang
		switch primary {
		case "en":
			l = incidentlib.LangEn
		case "ko":
			l = incidentlib.LangKo
		default:
			continue
		}
		if q > bestQ {
			best, bestQ = l, q
		}
	}
	return best
}

func parseQ(s string) (float64, error) {
	var f float64
	var err error
	switch {
	case s == "1" || strings.HasPrefix(s, "1."):
		f = 1
	case strings.HasPrefix(s, "0"):
		f, err = parseDecimal(s)
	default:
		err = errors.New("bad q")
	}
	return f, err
}

func parseDecimal(s string) (float64, error) {
	f, scale := 0.0, 1.0
	_, frac, _ := strings.Cut(s, ".")
	for _, c := range frac {
		if c < '0' || c > '9' {
			return 0, errors.New("bad q")
		}
		scale /= 10
		f += float64(c-'0') * scale
	}
	return f, nil
}
