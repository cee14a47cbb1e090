package storage

// SetSmallSet changes the size under which filtered pages are ordered in
// memory, so tests can drive both paths; it returns a function restoring it.
// Under n the page is sorted in memory whatever sortsInMemory's cost model
// says.
func SetSmallSet(n int) func() {
	old, oldModel := smallSet, pageCostModel
	smallSet, pageCostModel = n, false
	return func() { smallSet, pageCostModel = old, oldModel }
}

// StoreValues is storeValues, for the rooms test.
var StoreValues = storeValues

// Membership modes for SetMembershipMode.
const (
	MembershipAuto      = membershipAuto
	MembershipParts     = membershipParts
	MembershipIntersect = membershipIntersect
)

// SetMembershipMode forces how a filter's set is read (lazymatch.go):
// MembershipParts counts it with AndCardinality and walks pages asking
// each part, MembershipIntersect builds the set first, as before;
// MembershipAuto decides by the cost model. It returns a function
// restoring the mode.
func SetMembershipMode(m int) func() {
	old := membershipMode
	membershipMode = m
	return func() { membershipMode = old }
}

// HoldPublished sets db's published sequence back to seq, as it is
// between a commit and its handler (which publishes after bbolt let
// other transactions see the commit); the function returned publishes
// the sequence it replaced again.
func HoldPublished(db *DB, seq uint64) func() {
	was := db.seq.Swap(seq)
	return func() { db.publish(was) }
}
