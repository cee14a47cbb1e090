package graph

// The schema has no @defer. gqlparser's prelude, which gqlgen loads with
// the schema files, declares it, and gqlgen's executor delivers it only
// through transport.MultipartMixed, which the server does not mount; so
// introspection listed a directive that every query ignored (a deferred
// fragment came back in the one ordinary response). It is taken out of the
// schema gqlgen generated before anything reads it, so that introspection,
// validation and GET /schema.graphql agree: a query with @defer is refused
// as an unknown directive (GRAPHQL_VALIDATION_FAILED) instead of being
// answered as if it had none. TestNoDefer (server) checks all three.
func init() { delete(parsedSchema.Directives, "defer") }
