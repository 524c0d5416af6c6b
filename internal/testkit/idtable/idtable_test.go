package idtable

import (
	"testing"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// The PostgreSQL checks can fail: IDs holding two
// duplicates are refused by the key and counted.
func TestPrimaryKeyDuplicatesFindsThem(t *testing.T) {
	url := testenv.PostgresURL(t)
	if n := PrimaryKeyDuplicates(t, url, []int64{1, 2, 3, 4}); n != 0 {
		t.Errorf("distinct IDs: %d duplicates", n)
	}
	if n := PrimaryKeyDuplicates(t, url, []int64{7, 8, 7, 9, 8, 10}); n != 2 {
		t.Errorf("IDs with two repeated: %d duplicates, want 2", n)
	}
	if n := NotIn(t, url, []int64{1, 2, 5, 6}, []int64{2, 1, 3, 6}); n != 1 {
		t.Errorf("one ID handed out that was not issued: NotIn = %d, want 1", n)
	}
}
