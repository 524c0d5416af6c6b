package zkstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// client is what the store calls of a ZooKeeper session: the operations of
// *zk.Conn it uses. Tests put a wrapper between (export_test.go) that loses
// the reply of a write that committed.
type client interface {
	Get(path string) ([]byte, *zk.Stat, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Children(path string) ([]string, *zk.Stat, error)
	Sync(path string) (string, error)
	Multi(ops ...any) ([]zk.MultiResponse, error)
}

var _ client = (*zk.Conn)(nil)

// generational is a client whose session can be replaced (session.go):
// generation counts the replacements. A sync orders the reads after it
// only on its own session; a read that went to a newer one may be stale,
// and the store would take a stale record for a restore.
type generational interface {
	generation() uint64
}

// generation is c's session generation (0 for a client never replaced).
func generation(c client) uint64 {
	if g, ok := c.(generational); ok {
		return g.generation()
	}
	return 0
}

// errSwapped is the error of reads whose session was replaced after their
// sync: their outcome is unknown, and they are retried.
var errSwapped = errors.New("zkstore: the ZooKeeper session was replaced between a sync and the reads it orders; retry")

// call runs op, a request on the session, and returns its result, or the
// context's error if ctx ends first. go-zookeeper takes no context: a
// request made while the session is disconnected waits in its queue until
// the session reconnects, and is sent then. So a request abandoned here
// may still be sent and commit later: its outcome is unknown, as after a
// lost reply, and every write is conditional on the znode's version, so a
// late one commits only on the state it was made for.
func call[T any](ctx context.Context, op func() (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := op()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("%w (the request may still be sent and commit: its outcome is unknown)", ctx.Err())
	}
}

// definite reports whether err is an answer about the znode, after which
// the write certainly did not commit: a failed version compare, a znode
// that exists or does not. Every other error (a connection lost, a session
// expired, a context ended) leaves the outcome unknown.
func definite(err error) bool {
	return errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode)
}

// multiStat returns the stat the Set or Create of number n's znode
// answered in a Multi's responses (nil if none did).
func (s *Store) multiStat(n int, ops []any, res []zk.MultiResponse) *zk.Stat {
	for i, op := range ops {
		if i >= len(res) {
			break
		}
		switch o := op.(type) {
		case *zk.SetDataRequest:
			if o.Path == s.path(n) {
				return res[i].Stat
			}
		}
	}
	return nil
}

// failedOp returns the index of the op whose answer failed a Multi (the
// first with a definite error), or -1.
func failedOp(res []zk.MultiResponse) int {
	for i, r := range res {
		if r.Error != nil && definite(r.Error) {
			return i
		}
	}
	return -1
}
