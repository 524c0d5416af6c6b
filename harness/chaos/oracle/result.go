package oracle

// MaxExamples is how many duplicate IDs a Result describes at most.
const MaxExamples = 10

// Issued is one acknowledged ID and the index of the holder (or node) that
// issued it.
type Issued struct {
	// ID is the issued ID.
	ID int64
	// Source is the index of the holder or node that issued it.
	Source int32
}

// Result is what Close found.
type Result struct {
	// Received counts the IDs Add accepted.
	Received int64
	// Rows is count(*) of the table at the end.
	Rows int64
	// Duplicates is exact: Received minus the number of distinct IDs, so
	// an ID issued three times counts 2.
	Duplicates int64
	// Examples describes the first MaxExamples duplicated IDs found.
	Examples []Duplicate
	// SlowBatches counts the batches redone the slow way because their
	// COPY hit the primary key.
	SlowBatches int64
}

// Duplicate is one ID issued more than once.
type Duplicate struct {
	// ID is the duplicated ID.
	ID int64
	// Sources lists every source that issued it, as far as known: the
	// source of the row already in the table, then those of later copies in
	// the order received. Copies received after MaxExamples other IDs were
	// already described are listed too.
	Sources []int32
}
