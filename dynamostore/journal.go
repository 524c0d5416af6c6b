package dynamostore

import (
	"context"
	"errors"

	"github.com/snowfence/snowfence/lease"
)

// History is not written yet (issue 15's journal).
func (s *Store) History(ctx context.Context, machine int) ([]lease.JournalEntry, error) {
	return nil, errors.New("dynamostore: the journal is not built yet")
}
