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
