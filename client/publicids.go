package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/snowfence/snowfence"
)

// maxPublicIDsBody is the largest 200 body MintPublicIDs reads: 1,000 IDs
// and 1,000 public IDs of the longest type prefix are about 120 KB.
const maxPublicIDsBody = 256 << 10

// PublicID is an ID minted by MintPublicIDs and its sealed public ID, the
// text that opens to it (docs/public-ids.md).
type PublicID struct {
	// ID is the internal ID: the row's key.
	ID snowfence.ID
	// Public is ID sealed under the server's primary key as a public ID
	// of the type asked for, such as "order_25peqp0shbffmh4asf3fn5nb6zt".
	Public string
}

// MintPublicIDs mints n new IDs (1 ≤ n ≤ 1000) and has them sealed into
// public IDs of type prefix (POST /v1/public-ids:mint, which needs a
// server with a keyset), in one request that bypasses the buffer. It
// retries and fails over as a refill does (the package doc); a request
// retried after a failure may have minted IDs that are never seen, which
// costs nothing but those IDs. It needs no permission to seal IDs of the
// caller's choosing: the caller learns the pairing only of IDs it is given
// here. The IDs of the answer are strictly increasing (the client checks).
// It returns ctx's error when ctx ends first, and ErrClosed after Close.
// A type the server refuses is an error matching ErrRejected.
func (c *Client) MintPublicIDs(ctx context.Context, prefix string, n int) ([]PublicID, error) {
	if n < 1 || n > snowfence.MaxBatch {
		return nil, countError(n)
	}
	if c.ctx.Err() != nil {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.ctx, cancel)()
	body, err := json.Marshal(struct {
		Type  string `json:"type"`
		Count int    `json:"count"`
	}{prefix, n})
	if err != nil {
		return nil, err
	}
	var out []PublicID
	err = c.retry(ctx, func(base, _ string) (err error) {
		out, err = c.mintPublicIDs(ctx, base, body, prefix, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// mintPublicIDs sends one POST /v1/public-ids:mint to base. Only a complete
// 200 whose body is exactly n strictly increasing IDs and n public IDs of
// the type yields them.
func (c *Client) mintPublicIDs(ctx context.Context, base string, body []byte, prefix string, n int) ([]PublicID, error) {
	ctx, cancel := context.WithTimeout(ctx, c.s.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/public-ids:mint", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "snowfence-client")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("snowfence client: %w", err)
	}
	defer resp.Body.Close()
	if r := resp.Request; r != nil && r.URL != req.URL && r.URL.String() != req.URL.String() {
		return nil, badResponse(base, "the answer came from %s, after a redirect", r.URL.Redacted())
	}
	if resp.StatusCode != http.StatusOK {
		return nil, c.serverError(base, resp)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, badResponse(base, "Content-Type %q is not application/json", resp.Header.Get("Content-Type"))
	}
	b, err := readBody(resp.Body, nil, maxPublicIDsBody)
	if err != nil {
		return nil, fmt.Errorf("snowfence client: reading the answer of %s (no IDs taken from it): %w", base, err)
	}
	var got struct {
		IDs       []string `json:"ids"`
		PublicIDs []string `json:"public_ids"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		return nil, badResponse(base, "the answer is not {\"ids\": [...], \"public_ids\": [...]}: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badResponse(base, "data after the answer")
	}
	if len(got.IDs) != n || len(got.PublicIDs) != n {
		return nil, badResponse(base, "%d IDs and %d public IDs, asked for %d", len(got.IDs), len(got.PublicIDs), n)
	}
	out := make([]PublicID, n)
	for i, s := range got.IDs {
		id, err := snowfence.ParseID(s)
		if err != nil {
			return nil, badResponse(base, "ids[%d]: %v", i, err)
		}
		if i > 0 && id <= out[i-1].ID {
			return nil, badResponse(base, "ids[%d] %d does not follow %d", i, id, out[i-1].ID)
		}
		pid := got.PublicIDs[i]
		if !strings.HasPrefix(pid, prefix+"_") || len(pid) != len(prefix)+28 {
			return nil, badResponse(base, "public_ids[%d] %.80q is not a sealed public ID of type %q", i, pid, prefix)
		}
		out[i] = PublicID{ID: id, Public: pid}
	}
	return out, nil
}
