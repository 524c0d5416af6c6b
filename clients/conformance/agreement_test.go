package conformance

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// agreementCases is how many generated answers TestParseAgreement plays
// besides its fixed ones.
const agreementCases = 2000

// An agreementCase is one answer to a mint request of 3 IDs: a
// Content-Type and a body.
type agreementCase struct {
	contentType string
	body        string
}

// TestParseAgreement is a differential fuzz test of the part of every
// client that reads input from the network: each client asks a fake server
// for 3 IDs and gets one answer — the sound batch, or a mutation of it
// (bytes replaced, inserted, deleted, cut short, and a list of answers a
// lenient reader would take) — with one attempt only, and every client
// must do what the Go client does: hand out exactly the same IDs, or
// refuse the answer (unavailable: no IDs at all).
func TestParseAgreement(t *testing.T) {
	cases := agreementCorpus()
	verdicts := map[string][]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, lang := range languages {
		r := startRunner(t, lang)
		var cur atomic.Pointer[agreementCase]
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.URL.Path == "/healthz" {
				w.Write([]byte(`{"status":"ok"}`))
				return
			}
			if n, ok := mintCount(req, nil); !ok || n != 3 {
				http.Error(w, fmt.Sprintf("the test answers requests for 3 IDs, not %d", n), http.StatusBadRequest)
				return
			}
			c := cur.Load()
			if c.contentType != "" {
				w.Header().Set("Content-Type", c.contentType)
			} else {
				w.Header()["Content-Type"] = nil
			}
			w.Write([]byte(c.body))
		}))
		t.Cleanup(srv.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got []string
			for _, c := range cases {
				cur.Store(&c)
				a := r.call(map[string]any{"op": "open", "config": map[string]any{
					"endpoints": []string{srv.URL}, "min_refill": 3, "max_buffer": 3, "max_attempts": 1,
				}}, time.Minute)
				if !a.OK {
					t.Errorf("%s: open: %s", lang, describe(a))
					return
				}
				a = r.call(map[string]any{"op": "next_n", "n": 3}, time.Minute)
				got = append(got, verdict(a))
				r.call(map[string]any{"op": "close"}, time.Minute)
			}
			mu.Lock()
			verdicts[lang] = got
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ref := verdicts["go"]
	taken := 0
	for i, c := range cases {
		if strings.HasPrefix(ref[i], "ids") {
			taken++
		}
		for _, lang := range languages[1:] {
			if v := verdicts[lang][i]; v != ref[i] {
				t.Errorf("answer %q (Content-Type %q): %s: %s; the Go client: %s", c.body, c.contentType, lang, v, ref[i])
			}
		}
	}
	t.Logf("%d answers, %d of them sound (taken by the Go client), the rest refused", len(cases), taken)
	if taken == 0 || taken == len(cases) {
		t.Errorf("the corpus has %d sound answers of %d: it must hold both kinds", taken, len(cases))
	}
}

// verdict is what a client did with an answer: the IDs it handed out, or
// the kind of its refusal.
func verdict(a *answer) string {
	if a.OK {
		return "ids " + strings.Join(a.IDs, ",")
	}
	return a.kind()
}

// agreementCorpus is the fixed answers and agreementCases mutations of
// sound ones, from a fixed seed.
func agreementCorpus() []agreementCase {
	const a, b, c = "122736367296590448", "122736367296590449", "122736367296594944"
	sound := fmt.Sprintf(`{"ids":["%s","%s","%s"]}`, a, b, c)
	json := "application/json"
	cases := []agreementCase{
		{json, sound},
		{json, fmt.Sprintf(" \n{ \"ids\" :\t[ \"%s\" , \"%s\",\"%s\" ] }\r\n", a, b, c)},
		{"application/json; charset=utf-8", sound},
		{"Application/JSON", sound},
		{"text/plain", sound},
		{"", sound},
		{json, `{"ids":["1","2","3"]}`},
		{json, `{"ids":["9223372036854775805","9223372036854775806","9223372036854775807"]}`},
		{json, `{"ids":["9223372036854775806","9223372036854775807","9223372036854775808"]}`},
		{json, `{"ids":["0","1","2"]}`},
		{json, `{"ids":["01","2","3"]}`},
		{json, `{"ids":["-1","2","3"]}`},
		{json, `{"ids":["+1","2","3"]}`},
		{json, `{"ids":["1e3","2000","3000"]}`},
		{json, `{"ids":["1.0","2","3"]}`},
		{json, `{"ids":[1,2,3]}`},
		{json, `{"ids":["\u0031","2","3"]}`},
		{json, `{"\u0069ds":["1","2","3"]}`},
		{json, `{"ids":["1","2","3"],"ids":["4","5","6"]}`},
		{json, `{"ids":["1","2","3"]}{}`},
		{json, `{"ids":["1","2","3"]},`},
		{json, `{"ids":["1","2"]}`},
		{json, `{"ids":["1","2","3","4"]}`},
		{json, `{"ids":["1","3","2"]}`},
		{json, `{"ids":["1","1","2"]}`},
		{json, `{"ids":["1","2","3",]}`},
		{json, `{"IDS":["1","2","3"]}`},
		{json, `{"ids":["12345678901234567890","2","3"]}`},
		{json, `{"ids":["١","2","3"]}`},
		{json, "\ufeff" + sound},
		{json, `{"ids":["1","2","3"]`},
		{json, `["1","2","3"]`},
		{json, `null`},
		{json, ``},
		{json, `{"ids":null}`},
		{json, `{"ids":["1" "2","3"]}`},
		{json, `{"ids":["1","2","3"]} `},
		{json, "{\"ids\":[\"1\",\"2\",\"3\"]}\x00"},
		{json, `{"ids":[" 1","2","3"]}`},
		{json, `{ "ids" : [ "1" , "2" , "3" ] , }`},
	}
	rng := rand.New(rand.NewPCG(29, 2026))
	alphabet := `0123456789",[]{}: ` + "\t\n" + `-+.eE\u` + "x"
	for len(cases) < 40+agreementCases {
		body := []byte(sound)
		if rng.IntN(4) == 0 {
			body = []byte(cases[1].body)
		}
		for range 1 + rng.IntN(2) {
			i := rng.IntN(len(body) + 1)
			ch := alphabet[rng.IntN(len(alphabet))]
			switch rng.IntN(4) {
			case 0: // replace
				if i < len(body) {
					body[i] = ch
				}
			case 1: // insert
				body = append(body[:i], append([]byte{ch}, body[i:]...)...)
			case 2: // delete
				if i < len(body) {
					body = append(body[:i], body[i+1:]...)
				}
			case 3: // cut short
				body = body[:i]
			}
		}
		cases = append(cases, agreementCase{json, string(body)})
	}
	return cases
}
