package oracle

import (
	"errors"
	"fmt"
)

var (
	// ErrConfig is wrapped by Open's errors for an unusable Config.
	ErrConfig = errors.New("oracle: bad config")
	// ErrClosed is returned by Add after Close, and by a second Close.
	ErrClosed = errors.New("oracle: closed")
	// ErrMismatch is wrapped when the table disagrees with what the oracle
	// received: rows missing or extra, so the table is no longer a witness.
	ErrMismatch = errors.New("oracle: table disagrees with the IDs received")
)

// WriteError is the writer's fatal error: a batch could not be written, so
// the table misses IDs that were received. Add and Close return it.
type WriteError struct {
	// Batch is the failed batch's number, from 1.
	Batch int64
	// IDs is how many IDs the batch held.
	IDs int
	// Err is the cause.
	Err error
}

// Error says which batch was lost and why.
func (e *WriteError) Error() string {
	return fmt.Sprintf("oracle: batch %d (%d IDs) not written, the table misses them: %v", e.Batch, e.IDs, e.Err)
}

// Unwrap returns the cause.
func (e *WriteError) Unwrap() error { return e.Err }
