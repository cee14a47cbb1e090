package storage

// SetSmallSet changes the size under which filtered pages are ordered in
// memory, so tests can drive both paths; it returns a function restoring it.
func SetSmallSet(n int) func() {
	old := smallSet
	smallSet = n
	return func() { smallSet = old }
}

// StoreValues is storeValues, for the rooms test.
var StoreValues = storeValues
