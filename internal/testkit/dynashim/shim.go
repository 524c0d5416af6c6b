// Package dynashim is a loopback HTTP proxy in front of a DynamoDB-compatible
// test server (dynalite) that makes it behave, in the two ways the lease
// store depends on, like DynamoDB itself:
//
//   - On a failed condition (ConditionalCheckFailedException) of a write
//     that asked for ReturnValuesOnConditionCheckFailure=ALL_OLD, DynamoDB
//     returns the item the condition saw in the error body's "Item" field
//     (the AWS SDK v2 parses it into types.ConditionalCheckFailedException.
//     Item). Dynalite omits it. The shim reads the item with a consistent
//     GetItem on the same table and key and adds it to the error body in
//     that shape. Writes are serialised through the shim (one lock around
//     the write and the read that follows it), so the item added is exactly
//     the one the condition saw.
//   - A reply can be lost after the write committed: the shim can close the
//     connection instead of answering (DropNextReplies,
//     SetDropProbability), as a network failure would after DynamoDB
//     executed the request.
//
// Reads and table operations pass through unchanged and unserialised.
package dynashim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// targetPrefix is the X-Amz-Target prefix of DynamoDB's JSON 1.0 protocol.
const targetPrefix = "DynamoDB_20120810."

// writes are the operations whose replies the shim may drop and whose
// failed conditions it completes with the old item.
var writes = map[string]bool{"UpdateItem": true, "PutItem": true, "DeleteItem": true}

// A Shim is a running proxy. Its methods are safe for concurrent use.
type Shim struct {
	upstream string
	ln       net.Listener
	srv      *http.Server
	client   *http.Client

	writeMu sync.Mutex // serialises writes and their follow-up reads

	mu         sync.Mutex
	dropNext   int
	dropP      float64
	rnd        *rand.Rand
	dropped    int
	itemsAdded int
	keys       map[string][]string // table → key attribute names (for PutItem)
}

// Start starts a shim on 127.0.0.1 (a free port) in front of the
// DynamoDB-compatible server at upstream (e.g. "http://127.0.0.1:4567").
func Start(upstream string) (*Shim, error) {
	if !strings.HasPrefix(upstream, "http://") {
		return nil, fmt.Errorf("dynashim: upstream %q: want an http:// URL of a local DynamoDB-compatible server", upstream)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("dynashim: listen on loopback: %w", err)
	}
	s := &Shim{
		upstream: strings.TrimRight(upstream, "/"),
		ln:       ln,
		client:   &http.Client{Timeout: 30 * time.Second},
		keys:     map[string][]string{},
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// URL returns the endpoint to give the AWS SDK (BaseEndpoint).
func (s *Shim) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the proxy and closes its connections.
func (s *Shim) Close() error {
	err := s.srv.Close()
	s.client.CloseIdleConnections()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// DropNextReplies makes the next n write requests (UpdateItem, PutItem,
// DeleteItem) that the upstream executes lose their reply: the client sees
// the connection closed after the upstream answered — after the write
// committed, or after its condition refused it.
func (s *Shim) DropNextReplies(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropNext = max(n, 0)
}

// SetDropProbability makes every write's reply be dropped, after the
// upstream executed it, with probability p, drawn from a generator seeded
// with seed so a run can be replayed. p = 0 never drops.
func (s *Shim) SetDropProbability(p float64, seed uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropP = p
	s.rnd = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Stats returns how many replies were dropped and how many failed
// conditions got the old item added.
func (s *Shim) Stats() (dropped, itemsAdded int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped, s.itemsAdded
}

// shouldDrop decides, once per executed write, whether its reply is lost.
func (s *Shim) shouldDrop() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	drop := false
	switch {
	case s.dropNext > 0:
		s.dropNext--
		drop = true
	case s.dropP > 0 && s.rnd != nil:
		drop = s.rnd.Float64() < s.dropP
	}
	if drop {
		s.dropped++
	}
	return drop
}

// reply is an upstream response read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (s *Shim) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "dynashim: read request: "+err.Error(), http.StatusBadGateway)
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	if !writes[op] {
		rep, err := s.forward(r.Context(), r.Header, r.URL.RequestURI(), body)
		if err != nil {
			http.Error(w, "dynashim: upstream: "+err.Error(), http.StatusBadGateway)
			return
		}
		rep.write(w)
		return
	}
	s.writeMu.Lock()
	rep, err := s.forward(r.Context(), r.Header, r.URL.RequestURI(), body)
	if err == nil {
		rep = s.completeConditionFailure(r, op, body, rep)
	}
	s.writeMu.Unlock()
	if err != nil {
		http.Error(w, "dynashim: upstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	if s.shouldDrop() {
		hijack(w)
		return
	}
	rep.write(w)
}

// hijack closes the client's connection without a reply.
func hijack(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

func (rep reply) write(w http.ResponseWriter) {
	for k, vs := range rep.header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Connection", "Keep-Alive", "Transfer-Encoding":
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(rep.body)))
	w.WriteHeader(rep.status)
	w.Write(rep.body)
}

// forward sends one request to the upstream with the client's headers (the
// upstream checks that a signature is present, not that it is valid).
func (s *Shim) forward(ctx context.Context, h http.Header, uri string, body []byte) (reply, error) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, s.upstream+uri, bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	for k, vs := range h {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Connection", "Keep-Alive", "Transfer-Encoding", "Accept-Encoding":
			continue
		}
		req.Header[k] = append([]string(nil), vs...)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// writeRequest holds the fields of a write the shim looks at.
type writeRequest struct {
	TableName                           string                     `json:"TableName"`
	Key                                 map[string]json.RawMessage `json:"Key"`
	Item                                map[string]json.RawMessage `json:"Item"`
	ReturnValuesOnConditionCheckFailure string                     `json:"ReturnValuesOnConditionCheckFailure"`
}

// completeConditionFailure adds the item to a ConditionalCheckFailedException
// reply of a write that asked for ALL_OLD, as DynamoDB does; any other reply
// is returned as it is. Called with writeMu held, so no write ran since.
func (s *Shim) completeConditionFailure(r *http.Request, op string, body []byte, rep reply) reply {
	if rep.status != http.StatusBadRequest {
		return rep
	}
	var errBody map[string]json.RawMessage
	if json.Unmarshal(rep.body, &errBody) != nil {
		return rep
	}
	var typ string
	json.Unmarshal(errBody["__type"], &typ)
	if !strings.HasSuffix(typ, "ConditionalCheckFailedException") {
		return rep
	}
	if _, has := errBody["Item"]; has {
		return rep
	}
	var wr writeRequest
	if json.Unmarshal(body, &wr) != nil || wr.ReturnValuesOnConditionCheckFailure != "ALL_OLD" {
		return rep
	}
	key := wr.Key
	if op == "PutItem" {
		names, err := s.keyNames(r, wr.TableName)
		if err != nil {
			return rep
		}
		key = map[string]json.RawMessage{}
		for _, n := range names {
			key[n] = wr.Item[n]
		}
	}
	get, _ := json.Marshal(map[string]any{"TableName": wr.TableName, "Key": key, "ConsistentRead": true})
	got, err := s.call(r, "GetItem", get)
	if err != nil {
		return rep
	}
	var out struct {
		Item json.RawMessage `json:"Item"`
	}
	if json.Unmarshal(got, &out) != nil || len(out.Item) == 0 || string(out.Item) == "null" {
		return rep // no item: DynamoDB returns none either
	}
	errBody["Item"] = out.Item
	nb, err := json.Marshal(errBody)
	if err != nil {
		return rep
	}
	rep.body = nb
	rep.header = rep.header.Clone()
	// The SDK checks the body against this header (DynamoDB's CRC32).
	rep.header.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(nb)), 10))
	s.mu.Lock()
	s.itemsAdded++
	s.mu.Unlock()
	return rep
}

// call sends a request of operation op to the upstream with r's
// credentials and returns the body of a 200 reply.
func (s *Shim) call(r *http.Request, op string, body []byte) ([]byte, error) {
	h := r.Header.Clone()
	h.Set("X-Amz-Target", targetPrefix+op)
	rep, err := s.forward(r.Context(), h, r.URL.RequestURI(), body)
	if err != nil {
		return nil, err
	}
	if rep.status != http.StatusOK {
		return nil, fmt.Errorf("dynashim: %s: status %d: %s", op, rep.status, rep.body)
	}
	return rep.body, nil
}

// keyNames returns the key attributes of table, from DescribeTable (cached).
func (s *Shim) keyNames(r *http.Request, table string) ([]string, error) {
	s.mu.Lock()
	names, ok := s.keys[table]
	s.mu.Unlock()
	if ok {
		return names, nil
	}
	req, _ := json.Marshal(map[string]string{"TableName": table})
	b, err := s.call(r, "DescribeTable", req)
	if err != nil {
		return nil, err
	}
	var out struct {
		Table struct {
			KeySchema []struct{ AttributeName string }
		}
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	for _, k := range out.Table.KeySchema {
		names = append(names, k.AttributeName)
	}
	s.mu.Lock()
	s.keys[table] = names
	s.mu.Unlock()
	return names, nil
}
