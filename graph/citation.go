package graph

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/incidentlib/incidentlib"
	"github.com/incidentlib/incidentlib/citation"
	"github.com/incidentlib/incidentlib/graph/model"
)

// What Incident.citation needs of the request beside the record: the
// incident's address as this request reaches the library (the resolver's
// IncidentURL, put in the request's context by Middleware, the one way
// into GraphQL of every transport), and a mark that the response is the
// request's own, which the response cache reads (VariesByRequest).

// requestLinks is the request's way to the incidents' addresses.
type requestLinks struct {
	req         *http.Request
	incidentURL func(r *http.Request, id string) string
	used        atomic.Bool // a citation was written
}

type linksKey struct{}

// withIncidentURLs returns ctx in which incident id's address is
// incidentURL(req, id).
func withIncidentURLs(ctx context.Context, incidentURL func(r *http.Request, id string) string, req *http.Request) context.Context {
	return context.WithValue(ctx, linksKey{}, &requestLinks{req: req, incidentURL: incidentURL})
}

// VariesByRequest reports whether the response of the request in ctx
// holds what is that request's own (a citation names the request's host
// and the day it was asked), so that no cache keeps it for another.
func VariesByRequest(ctx context.Context) bool {
	l, _ := ctx.Value(linksKey{}).(*requestLinks)
	return l != nil && l.used.Load()
}

// citationOf writes the citation of inc in style, its title in lang.
func citationOf(ctx context.Context, inc *incidentlib.Incident, style model.CitationStyle, lang incidentlib.Lang) (string, error) {
	l, _ := ctx.Value(linksKey{}).(*requestLinks)
	if l == nil {
		return "", incidentlib.Errorf(incidentlib.EUNAVAILABLE, "citation: the server names no address for its incidents (Resolver.IncidentURL)")
	}
	l.used.Store(true)
	w := citation.Work{ID: inc.ID, Title: inc.Title.In(lang), Organization: inc.Org, Date: inc.Date,
		Version: inc.CurrentVersion(), URL: l.incidentURL(l.req, inc.ID), Accessed: time.Now()}
	switch t := inc.Title; {
	case t.Ko != "" && (lang == incidentlib.LangKo || t.En == ""):
		w.Lang = "ko"
	case t.En != "":
		w.Lang = "en"
	}
	if style == model.CitationStyleCSLJSON {
		return citation.CSLJSON(w)
	}
	return citation.BibTeX(w), nil
}
