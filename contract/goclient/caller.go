// Command goclient makes the natural call of every operation of
// api/openapi.json through the client oapi-codegen generates from it
// (api.gen.go, made by go generate, or by TestE2EGeneratedClients in
// cmd/snowfence, which runs this against a live serve), and checks each
// answer as the generated types read it. It prints the operations it called,
// one a line, and exits 1 on the first call that did not work.
//
//	go generate && go run . -url http://127.0.0.1:8080
//
// It is a module of its own so that the product's module does not require
// oapi-codegen or its runtime.
package main

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../api/openapi.json

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	url := flag.String("url", "", "base URL of a serve with a public-ID keyset that lets every caller open and seal (--public-id-open-without-tls), without --admin-listen")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := NewClientWithResponses(*url)
	if err != nil {
		fail("client", err)
	}
	if err := calls(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(1)
}

// check turns a call's outcome into an error: a transport error, or else
// (from got) another status than 200, or a 200 the generated code did not
// decode as the call expects.
func check(op string, err error, got func() (status int, body []byte, decoded bool)) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	status, body, decoded := got()
	switch {
	case status != http.StatusOK:
		return fmt.Errorf("%s: status %d, body %.300s", op, status, body)
	case !decoded:
		return fmt.Errorf("%s: the generated client did not decode the 200 as expected: %.300s", op, body)
	}
	fmt.Println(op)
	return nil
}

func ptr[T any](v T) *T { return &v }

// calls makes each operation's natural call: the generated method with
// what a caller would pass, nil for what it has not got.
func calls(ctx context.Context, c *ClientWithResponses) error {
	// mintIDs with no body given: the client sends null.
	one, err := c.MintIDsWithResponse(ctx, nil, nil)
	if e := check("mintIDs", err, func() (int, []byte, bool) {
		return one.StatusCode(), one.Body, one.JSON200 != nil && one.JSON200.Id != nil
	}); e != nil {
		return e
	}
	// id_num, where a Go decoder reads it, is the same ID.
	if n := one.JSON200.IdNum; n == nil || strconv.FormatInt(*n, 10) != *one.JSON200.Id {
		return fmt.Errorf("mintIDs: id_num %v is not id %s", n, *one.JSON200.Id)
	}
	id := *one.JSON200.Id
	many, err := c.MintIDsWithResponse(ctx, &MintIDsParams{Count: ptr(3)}, nil)
	if e := check("mintIDs?count", err, func() (int, []byte, bool) {
		return many.StatusCode(), many.Body, many.JSON200 != nil && many.JSON200.Ids != nil && len(*many.JSON200.Ids) == 3
	}); e != nil {
		return e
	}
	// mintBatch with the count in the body, and in the query (the body's
	// count unset: the client sends {}).
	b, err := c.MintBatchWithResponse(ctx, nil, MintBatchJSONRequestBody{Count: ptr(3)})
	if e := check("mintBatch", err, func() (int, []byte, bool) { return b.StatusCode(), b.Body, b.JSON200 != nil && len(b.JSON200.Ids) == 3 }); e != nil {
		return e
	}
	b, err = c.MintBatchWithResponse(ctx, &MintBatchParams{Count: ptr(3)}, MintBatchJSONRequestBody{})
	if e := check("mintBatch?count", err, func() (int, []byte, bool) { return b.StatusCode(), b.Body, b.JSON200 != nil && len(b.JSON200.Ids) == 3 }); e != nil {
		return e
	}
	d, err := c.DecodeIDWithResponse(ctx, id)
	if e := check("decodeID", err, func() (int, []byte, bool) { return d.StatusCode(), d.Body, d.JSON200 != nil && d.JSON200.Id == id }); e != nil {
		return e
	}
	u, err := c.MintUUIDsWithResponse(ctx, nil, nil)
	if e := check("mintUUIDs", err, func() (int, []byte, bool) { return u.StatusCode(), u.Body, u.JSON200 != nil && u.JSON200.Uuid != nil }); e != nil {
		return e
	}
	u, err = c.MintUUIDsWithResponse(ctx, &MintUUIDsParams{Count: ptr(2)}, nil)
	if e := check("mintUUIDs?count", err, func() (int, []byte, bool) {
		return u.StatusCode(), u.Body, u.JSON200 != nil && u.JSON200.Uuids != nil && len(*u.JSON200.Uuids) == 2
	}); e != nil {
		return e
	}
	s, err := c.SealPublicIDsWithResponse(ctx, SealPublicIDsJSONRequestBody{Type: "order", Ids: []IDString{id}})
	if e := check("sealPublicIDs", err, func() (int, []byte, bool) {
		return s.StatusCode(), s.Body, s.JSON200 != nil && len(s.JSON200.PublicIds) == 1
	}); e != nil {
		return e
	}
	o, err := c.OpenPublicIDWithResponse(ctx, s.JSON200.PublicIds[0])
	if e := check("openPublicID", err, func() (int, []byte, bool) { return o.StatusCode(), o.Body, o.JSON200 != nil && o.JSON200.Id == id }); e != nil {
		return e
	}
	// mintPublicIDs: new rows' IDs, minted sealed; each public ID opens to
	// the ID beside it.
	mp, err := c.MintPublicIDsWithResponse(ctx, MintPublicIDsJSONRequestBody{Type: "order", Count: 3})
	if e := check("mintPublicIDs", err, func() (int, []byte, bool) {
		return mp.StatusCode(), mp.Body, mp.JSON200 != nil && len(mp.JSON200.Ids) == 3 && len(mp.JSON200.PublicIds) == 3
	}); e != nil {
		return e
	}
	o, err = c.OpenPublicIDWithResponse(ctx, mp.JSON200.PublicIds[2])
	if e := check("openPublicID?minted", err, func() (int, []byte, bool) {
		return o.StatusCode(), o.Body, o.JSON200 != nil && o.JSON200.Id == mp.JSON200.Ids[2]
	}); e != nil {
		return e
	}
	h, err := c.HealthWithResponse(ctx)
	if e := check("health", err, func() (int, []byte, bool) { return h.StatusCode(), h.Body, h.JSON200 != nil }); e != nil {
		return e
	}
	r, err := c.ReadyWithResponse(ctx)
	if e := check("ready", err, func() (int, []byte, bool) { return r.StatusCode(), r.Body, r.JSON200 != nil }); e != nil {
		return e
	}
	l, err := c.LiveWithResponse(ctx)
	if e := check("live", err, func() (int, []byte, bool) { return l.StatusCode(), l.Body, l.JSON200 != nil && l.JSON200.Alive }); e != nil {
		return e
	}
	m, err := c.MetricsWithResponse(ctx)
	if e := check("metrics", err, func() (int, []byte, bool) { return m.StatusCode(), m.Body, len(m.Body) > 0 }); e != nil {
		return e
	}
	a, err := c.OpenapiWithResponse(ctx)
	if e := check("openapi", err, func() (int, []byte, bool) { return a.StatusCode(), a.Body, a.JSON200 != nil }); e != nil {
		return e
	}
	p, err := c.StatusPageWithResponse(ctx)
	if e := check("statusPage", err, func() (int, []byte, bool) { return p.StatusCode(), p.Body, len(p.Body) > 0 }); e != nil {
		return e
	}
	sa, err := c.StatusAssetWithResponse(ctx, StatusAssetParamsAsset("status.js"))
	if e := check("statusAsset", err, func() (int, []byte, bool) { return sa.StatusCode(), sa.Body, len(sa.Body) > 0 }); e != nil {
		return e
	}
	st, err := c.StatusWithResponse(ctx)
	if e := check("status", err, func() (int, []byte, bool) { return st.StatusCode(), st.Body, st.JSON200 != nil }); e != nil {
		return e
	}
	sd, err := c.StatusDecodeIDWithResponse(ctx, id)
	return check("statusDecodeID", err, func() (int, []byte, bool) { return sd.StatusCode(), sd.Body, sd.JSON200 != nil && sd.JSON200.Id == id })
}
