package graph

import (
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/incidentlib/incidentlib/graph/model"
)

// events writes an incident's typed timeline.
func (x *fastExec) events(evs []*model.TimelineEvent, sel ast.SelectionSet) {
	p := x.plan(sel, "TimelineEvent")
	x.list(len(evs), func(k int) {
		e := evs[k]
		x.object(p, "TimelineEvent", func(f *pfield) {
			switch f.Name {
			case "at":
				x.optStr(e.At())
			case "offset":
				x.optStr(e.Offset())
			case "offsetSeconds":
				x.optInt(e.OffsetSeconds())
			case "kind":
				x.str(string(e.Kind()))
			case "text":
				x.optStr(e.Text(f.lang))
			default:
				bail()
			}
		})
	})
}
