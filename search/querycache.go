package search

import (
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/incidentlib/incidentlib"
)

// Compiled queries are kept, so that the next page of a search, the same
// search with another filter, and its facets and years do not parse,
// analyze and translate the query again. A compiled query depends on the
// query, the language and the glossary alone (not on the index), and is
// read only once compiled.

// queryCacheSize bounds how many compiled queries an index keeps.
const queryCacheSize = 256

// maxCachedLegs bounds the size of a compiled query that is kept: one of
// more legs (a long query with many forms) is compiled anew each time.
// With it, the cache holds at most about 256 × 1,024 legs (some 20 MB of
// legs and their terms in the worst case; a query of a few words has
// tens).
const maxCachedLegs = 1024

// compiledQuery is a query as prepare compiled it, with the glossary it
// was compiled with (nil for none).
type compiledQuery struct {
	tr      *translator
	clauses []clause
	c       *compiled
}

type queryCache = lru.Cache[string, compiledQuery]

func newQueryCache() *queryCache {
	c, _ := lru.New[string, compiledQuery](queryCacheSize)
	return c
}

// compileQuery returns the clauses of query and the query compiled for
// lang with tr, from the cache when it holds them for tr. It returns
// EBADQUERY errors as parse and compile do, EINVALID for an unknown
// language; the glossary is read (translator) only once the query parsed.
func (x *Index) compileQuery(query string, lang *incidentlib.Lang, translator func() (*translator, error)) ([]clause, *compiled, *translator, error) {
	var l incidentlib.Lang
	if lang != nil {
		l = *lang
	}
	key := string(l) + "\x00" + query
	cq, hit := x.queries.Get(key)
	if !hit {
		clauses, err := parse(query)
		if err != nil {
			return nil, nil, nil, err
		}
		if lang != nil && !lang.IsValid() {
			return nil, nil, nil, incidentlib.FieldErrorf(incidentlib.EINVALID, []string{"lang"}, "unknown language %q", *lang)
		}
		cq.clauses = clauses
	}
	tr, err := translator()
	if err != nil {
		return nil, nil, nil, err
	}
	if hit && cq.tr == tr {
		return cq.clauses, cq.c, tr, nil
	}
	c, err := compile(cq.clauses, l, tr)
	if err != nil {
		return nil, nil, nil, err
	}
	cq.tr, cq.c = tr, c
	if legsOf(c) <= maxCachedLegs {
		x.queries.Add(key, cq)
	}
	return cq.clauses, c, tr, nil
}

// legsOf counts the legs of c.
func legsOf(c *compiled) int {
	n := 0
	for _, cls := range [][]clauseQ{c.must, c.mustNot} {
		for i := range cls {
			n += len(cls[i].legs)
		}
	}
	if c.bonus != nil {
		n += len(c.bonus.legs)
	}
	if c.direct != nil {
		n += legsOf(c.direct)
	}
	return n
}
