// Package importer turns files of public postmortem collections into
// IL-JSON records (incidentlib.Incident).
//
// It reads files and directories and never opens the store: Load returns
// the records, and the store assigns ids and writes them. Records of every
// format other than IL-JSON have an empty ID; every record Load returns
// passes (*incidentlib.Incident).Validate once it has one.
//
// # Formats
//
// Detect and Load tell the formats apart by name and content, one file at
// a time. LICENSE, SOURCE.txt, READMEs without a link list and templates
// are not records: Load lists them in Result.Skipped.
//
//   - il-json, jsonl: the library's own format; one object, an array, or
//     one object per line. Ids, unknown fields and review are kept
//     (review.written_by null stays null). Problems
//     name the line, the array index and the id.
//   - frontmatter-md (github.com/icco/postmortems, GPL-3.0): YAML front
//     matter and a narrative body. title -> title.en (else the summary's
//     first sentence, else "<Org> postmortem: <product> (<date>)", with
//     extra.title_derived); company -> org through the alias table (else the
//     url's host); start_time -> date, date_kind "incident", else
//     source_published_at -> date_kind "published" (the date as the source's
//     own clock shows it; years before 1970 are fine); end_time - start_time
//     -> timeline.resolved_after ("2h30m"); summary -> summary.en, or the body
//     when the summary is empty, the body otherwise in extra.narrative;
//     url and archive_url -> sources [{url, kind "postmortem", archived}];
//     product -> extra.product; categories and keywords -> terms.
//   - sectioned-md (github.com/dfds/postmortems, MIT): "# Title" (else the
//     file name after "PMyyyy-nnn - "); Summary -> summary; Lessons Learned
//     and then "Contributing factors:" with the Contributing Factors list ->
//     lessons; Action Items -> action_items, one per list item; the Timeline
//     table -> extra.source_timeline, its first row dated in the year of the
//     PM id -> date; Stats: Category -> terms (field "category"), Time to
//     detection and Time to recovery -> timeline (else derived from rows
//     marked "Detection:"/"Recovery:" or worded so, measured from the first
//     timed row; extra.timeline_basis says which). Attendees are left out.
//     org is the repository owner (Options.Org overrides); the source is the
//     file in the repository at the commit of SOURCE.txt.
//   - json-list (github.com/macintux/Service-postmortems, MIT): [{url,
//     domain, date, keywords}]. domain -> org through the alias table's
//     domains; date -> date, date_kind "incident"; keywords -> terms; title
//     "<Org> postmortem: <keywords> (<date>)", made only of those fields.
//   - link-list-md: "- [Org](url). Description" items under "#"/"##"
//     headings. Org -> org; url (and any further links that follow it) ->
//     sources; the description's first sentence -> title, the whole
//     description -> summary; the heading -> terms (field "heading").
//
// Every adapter but IL-JSON sets review.written_by "import", severity
// "unknown" when the taxonomy has it, and extra.licence (SPDX, from the
// collection's LICENSE), extra.attribution ("<collection>, <repository> at
// <commit>") and extra.source_key. Texts longer than the validation limits
// are cut at a rune boundary and end with "…" (Record.Warnings says so).
//
// # Terms
//
// Each category, keyword or heading is resolved with Taxonomy.Resolve on
// the kinds domain, symptom, component, root_cause and contributing, as
// written and with spaces as hyphens; it becomes a term of every kind that
// resolves it (the first root cause wins; others go to
// extra.other_root_causes). Values no kind resolves are kept in
// extra.source_tags by field and listed in Record.Unmapped as
// "field=value"; UnmappedCounts totals them.
//
// # Source keys
//
// Record.SourceKey is the collection name ("icco", "dfds", "macintux": the
// repository owner in SOURCE.txt, or Options.Collection), "/", and the
// source's own id: the icco uuid, the dfds PM id, or for lists the
// NormalizeURL of the link. Load reports a second record with a key it
// has already read as a problem. Result.DuplicateURLs finds the same
// postmortem across collections.
package importer
