package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// errUnknownOutcome is the error a flakyKV returns: the caller cannot tell
// whether the transaction committed (a timeout, a lost connection).
var errUnknownOutcome = errors.New("injected: transaction outcome unknown")

// A fault says what a flakyKV does with one transaction.
type fault int

const (
	pass          fault = iota // send it and return etcd's answer
	lostReply                  // send it, let it commit, and return errUnknownOutcome
	neverSent                  // return errUnknownOutcome without sending it
	dropNextReads              // lostReply, and neverSent for the next transaction that writes nothing
)

// flakyKV wraps a client's KV so that a test decides the fate of every
// claim transaction (one that puts an owner key): decide is called for
// each, under the wrapper's lock. After dropNextReads the next
// transaction that writes nothing (the claim's re-read) is not sent
// either. After loseNextWrite the next transaction that writes, whatever
// it is, commits and its reply is lost. Install it in the client before
// any Store uses the client.
type flakyKV struct {
	clientv3.KV
	mu        sync.Mutex
	decide    func() fault
	dropRead  bool
	loseWrite bool
	claims    int // claim transactions seen
	injected  int // claim transactions failed
	committed int // of those, how many were sent
}

// loseNextWrite makes the next transaction that writes commit and lose its
// reply.
func (k *flakyKV) loseNextWrite() {
	k.mu.Lock()
	k.loseWrite = true
	k.mu.Unlock()
}

// installFlaky replaces cli's KV with a flakyKV deciding by decide.
func installFlaky(cli *clientv3.Client, decide func() fault) *flakyKV {
	k := &flakyKV{KV: cli.KV, decide: decide}
	cli.KV = k
	return k
}

// Txn implements clientv3.KV.
func (k *flakyKV) Txn(ctx context.Context) clientv3.Txn {
	return &flakyTxn{Txn: k.KV.Txn(ctx), kv: k}
}

// flakyTxn notes, as the transaction is built, whether it claims (puts an
// owner key) or writes at all.
type flakyTxn struct {
	clientv3.Txn
	kv            *flakyKV
	claim, writes bool
}

func (t *flakyTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }

func (t *flakyTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.note(ops)
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *flakyTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.note(ops)
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *flakyTxn) note(ops []clientv3.Op) {
	for _, op := range ops {
		if op.IsPut() || op.IsDelete() || op.IsTxn() {
			t.writes = true
		}
		if op.IsPut() && strings.Contains(string(op.KeyBytes()), "/owner/") {
			t.claim = true
		}
	}
}

func (t *flakyTxn) Commit() (*clientv3.TxnResponse, error) {
	k := t.kv
	k.mu.Lock()
	f := pass
	switch {
	case t.writes && k.loseWrite:
		k.loseWrite = false
		f = lostReply
	case t.claim:
		k.claims++
		f = k.decide()
		if f != pass {
			k.injected++
		}
		if f == lostReply || f == dropNextReads {
			k.committed++
		}
		k.dropRead = k.dropRead || f == dropNextReads
	case !t.writes && k.dropRead:
		k.dropRead = false
		f = neverSent
	}
	k.mu.Unlock()
	switch f {
	case pass:
		return t.Txn.Commit()
	case lostReply, dropNextReads:
		if _, err := t.Txn.Commit(); err != nil {
			return nil, err
		}
	}
	return nil, errUnknownOutcome
}
