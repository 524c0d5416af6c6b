package lease_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/lease"
)

// TestNoticeWindowConfigChecks: a keeper whose own notice window is longer
// than the store's MaxNoticeWindow is refused at start, saying which
// self-fence would do; the longest self-fence it names is accepted.
func TestNoticeWindowConfigChecks(t *testing.T) {
	longest := 6363 * time.Millisecond // (8 s − 1 s) / 1.1, to the ms below
	if w := lease.NoticeWindow(longest); w > etcdstore.MaxNoticeWindow {
		t.Fatalf("NoticeWindow(%s) = %s, above etcd's bound %s", longest, w, etcdstore.MaxNoticeWindow)
	}
	ok := lease.KeeperConfig{Store: windowStore{max: etcdstore.MaxRestoreWindow}, SelfFence: longest}
	if _, err := lease.Defaults(ok); err != nil {
		t.Errorf("self-fence %s refused: %v", longest, err)
	}
	long := lease.KeeperConfig{Store: windowStore{max: etcdstore.MaxRestoreWindow}, SelfFence: longest + time.Millisecond}
	_, err := lease.Defaults(long)
	if !errors.Is(err, lease.ErrInvalid) || !strings.Contains(err.Error(), "at most 6.363s") {
		t.Fatalf("self-fence %s: %v, want ErrInvalid naming the longest self-fence 6.363s", long.SelfFence, err)
	}
	t.Logf("operator sees: %v", err)
	if got, want := lease.NoticeWindow(5*time.Second), 6500*time.Millisecond; got != want {
		t.Errorf("NoticeWindow(5 s) = %s, want %s (× 1.1 + 1 s)", got, want)
	}
}
