package zkstore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/snowfence/snowfence/internal/testkit/zktest"
)

// Settle retries f, whose session may still be reconnecting after a
// restart or a restore, while it fails with an error that is none of the
// typed ones (bounded), and returns its last error: the attack kit's
// attackSettle, for the black-box tests.
func Settle(t *testing.T, f func(ctx context.Context) error) error {
	t.Helper()
	return attackSettle(t, f)
}

// Pump writes n znodes under path on a fresh session, so that the
// restored servers' zxid passes every zxid the sessions of the test saw
// before the restore: the attack kit's attackPump, for the black-box tests.
func Pump(t *testing.T, e *zktest.Ensemble, path string, n int) {
	t.Helper()
	attackPump(t, e, path, n)
}

// lossy is a client whose next write, once armed, reaches ZooKeeper and
// commits, and whose reply is lost: the store sees a connection error, as
// when the connection drops after the server applied the write.
type lossy struct {
	client
	armed atomic.Bool
}

func (c *lossy) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	st, err := c.client.Set(path, data, version)
	if err == nil && c.armed.CompareAndSwap(true, false) {
		return nil, zk.ErrConnectionClosed
	}
	return st, err
}

func (c *lossy) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	p, err := c.client.Create(path, data, flags, acl)
	if err == nil && c.armed.CompareAndSwap(true, false) {
		return "", zk.ErrConnectionClosed
	}
	return p, err
}

func (c *lossy) Multi(ops ...any) ([]zk.MultiResponse, error) {
	res, err := c.client.Multi(ops...)
	if err == nil && c.armed.CompareAndSwap(true, false) {
		return nil, zk.ErrConnectionClosed
	}
	return res, err
}

// NewLossy returns a Store on conn (which the caller closes) whose next
// committed write after lose has its reply lost.
func NewLossy(conn *zk.Conn, cfg Config) (st *Store, lose func(), err error) {
	c := &lossy{client: conn}
	s, err := newStore(c, cfg)
	if err != nil {
		return nil, nil, err
	}
	return s, func() { c.armed.Store(true) }, nil
}

// hooked is a client that runs before ahead of its first multi-op (a
// claim's write).
type hooked struct {
	client
	before func()
	once   sync.Once
}

func (c *hooked) Multi(ops ...any) ([]zk.MultiResponse, error) {
	c.once.Do(c.before)
	return c.client.Multi(ops...)
}

// NewHooked returns a Store on conn (which the caller closes) that runs
// before ahead of its first claim's write, after the claim read.
func NewHooked(conn *zk.Conn, cfg Config, before func()) (*Store, error) {
	return newStore(&hooked{client: conn, before: before}, cfg)
}

// dropping is a client whose first multi-op runs before and is then lost
// unsent: the store sees a connection error, an outcome it cannot know,
// though nothing reached ZooKeeper.
type dropping struct {
	client
	before func()
	once   sync.Once
}

func (c *dropping) Multi(ops ...any) ([]zk.MultiResponse, error) {
	dropped := false
	c.once.Do(func() { c.before(); dropped = true })
	if dropped {
		return nil, zk.ErrConnectionClosed
	}
	return c.client.Multi(ops...)
}

// NewDropping returns a Store on conn (which the caller closes) whose first
// multi-op (a claim's write) runs before, after the claim read, and is then
// lost unsent, with an error of unknown outcome.
func NewDropping(conn *zk.Conn, cfg Config, before func()) (*Store, error) {
	return newStore(&dropping{client: conn, before: before}, cfg)
}
