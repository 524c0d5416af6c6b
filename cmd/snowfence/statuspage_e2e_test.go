package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// screenshotsEnv names a directory where TestE2EStatusPage saves the
// screenshots it takes (docs/status-*.png come from it); unset, it saves
// none.
const screenshotsEnv = "SNOWFENCE_SCREENSHOTS"

// browserPath finds Debian's chromium, or calls testenv.Missing.
func browserPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "no chromium: install Debian's chromium package (apt-get install chromium)")
	return ""
}

// browserLog is what the page did that the test must see: every request
// it made and every console error or uncaught exception.
type browserLog struct {
	mu       sync.Mutex
	requests []string
	errors   []string
}

func (b *browserLog) snapshot() (requests, errors []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...), append([]string(nil), b.errors...)
}

// watch records the page's requests and console errors until ctx ends.
func (b *browserLog) watch(ctx context.Context, wg *sync.WaitGroup) {
	reqs := chromedp.Events(ctx, network.RequestWillBeSent)
	console := chromedp.Console(ctx)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ev, err := range reqs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.requests = append(b.requests, ev.Request.URL)
			b.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for m, err := range console {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				b.mu.Lock()
				b.errors = append(b.errors, m.String())
				b.mu.Unlock()
			}
		}
	}()
}

// The status page in headless Chromium, on the admin listener of a real
// serve: it loads with no console error and asks nothing of anything but
// that server; it shows this holder's machine number and a countdown to
// the fence that moves between polls; a second holder started on the same
// etcd appears in its fleet table; and its decoder draws the bits of
// 97301141913751557 with machine 37 and sequence 5. It reads well at a
// phone's 390 px too (no sideways scrolling). With SNOWFENCE_SCREENSHOTS
// set it saves a screenshot of each view there.
func TestE2EStatusPage(t *testing.T) {
	t.Parallel()
	chromium := browserPath(t)
	shots := os.Getenv(screenshotsEnv)
	etcd := etcdtest.Start(t, 1)
	store := []string{"--etcd-endpoints", strings.Join(etcd.Endpoints(), ",")}
	a := startService(t, t.TempDir(), append(store, "--machines", "37-37", "--admin-listen", "127.0.0.1:0")...)
	if a.admin == "" {
		t.Fatal("A printed no admin line")
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000),
		chromedp.UserDataDir(t.TempDir()))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	// The first Run starts the browser and lives as long as bctx; every
	// step after it gets a deadline of its own.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	var log browserLog
	var watchers sync.WaitGroup
	watchCtx, stopWatching := context.WithCancel(bctx)
	log.watch(watchCtx, &watchers)
	defer func() { stopWatching(); watchers.Wait() }()

	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 45*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, steps...); err != nil {
			body, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			t.Fatalf("%s: %v\npage text:\n%s\nA's log:\n%s", what, err, body, a.stderr)
		}
	}
	eval := func(what, expr string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	save := func(name string, shot chromedp.Action[[]byte]) {
		t.Helper()
		if shots == "" {
			return
		}
		ctx, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		png, err := chromedp.Run(ctx, shot)
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	poll := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(40*time.Second))
	}

	// This holder: issuing, machine 37, its token.
	step("load the page",
		chromedp.Navigate(a.admin+"/"),
		poll(`document.getElementById("machine").textContent === "37"`),
		poll(`document.getElementById("state").textContent.startsWith("Issuing")`),
		poll(`document.getElementById("token").textContent !== "–"`))
	if h1 := eval("the heading", `document.querySelector("h1").textContent`); h1 != "snowfence status" {
		t.Errorf("h1 %q", h1)
	}
	// The countdown moves between polls (the page polls once a second and
	// redraws the countdown every 100 ms): within one poll's time it shows
	// at least three readings, each below the one before.
	step("the countdown moves", poll(`(() => {
		const v = Number(document.getElementById("fence").dataset.ms);
		const w = window.__fence = window.__fence || {last: v, downs: 0};
		if (v < w.last) { w.downs++; }
		w.last = v;
		return w.downs >= 3;
	})()`))
	// IDs per second from the issued counter: mint through A's main
	// listener and the count shows.
	for range 5 {
		if r := call(t, "POST", a.url+"/v1/ids?count=100", "", ""); r.status != 200 {
			t.Fatalf("mint: %d %s", r.status, r.body)
		}
	}
	step("the issued count", poll(`document.getElementById("issued").textContent === "500"`))
	save("status-holder.png", chromedp.Screenshot(chromedp.ID("holder")))

	// The fleet: A's number, then B's once B starts.
	step("A in the fleet", poll(`(() => { const r = document.querySelector('#fleet-rows tr[data-machine="37"]');
		return r !== null && r.className === "self" && r.cells[2].textContent.includes("(this holder)"); })()`))
	b := startService(t, t.TempDir(), append(store, "--machines", "38-38")...)
	step("B in the fleet", poll(`(() => { const r = document.querySelector('#fleet-rows tr[data-machine="38"]');
		return r !== null && r.cells[2].textContent !== "free" && r.className === ""; })()`))
	save("status-fleet.png", chromedp.Screenshot(chromedp.ID("fleet")))

	// The decoder, through its labelled input.
	if label := eval("the input's label", `document.querySelector('label[for="decode-id"]').textContent`); label == "" {
		t.Error("the decoder's input has no label")
	}
	step("decode 97301141913751557",
		chromedp.SetValue(chromedp.ID("decode-id"), "97301141913751557"),
		chromedp.Click(chromedp.CSS(`#decode-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("bitpicture")))
	fields := eval("the bit picture", `Array.from(document.querySelectorAll("#fields li")).map(li => li.dataset.field + "=" + li.dataset.value).join(" ")`)
	if want := "sign=0 time=23198400000 machine=37 sequence=5"; fields != want {
		t.Errorf("the bit picture's fields: %q, want %q", fields, want)
	}
	if n := eval("the bits", `String(document.querySelectorAll("#bits span").length)`); n != "64" {
		t.Errorf("the bit picture draws %s bits, want 64", n)
	}
	save("status-decoder.png", chromedp.Screenshot(chromedp.ID("decoder")))
	save("status-page.png", chromedp.FullScreenshot(100))

	// An ID dated after the server's clock (2095) is drawn too, its
	// caption saying so as a warning: the decode answers 200 with an
	// in_future warning, no longer a 422 the page showed as an error.
	step("decode 9223372036854775807",
		chromedp.SetValue(chromedp.ID("decode-id"), "9223372036854775807"),
		chromedp.Click(chromedp.CSS(`#decode-form button[type=submit]`)),
		poll(`document.getElementById("bit-caption").textContent.indexOf("9223372036854775807") >= 0`))
	if hidden := eval("the bit picture", `String(document.getElementById("bitpicture").hidden)`); hidden != "false" {
		t.Error("a future ID: the bit picture is hidden, want it drawn")
	}
	if c := eval("the caption", `document.getElementById("bit-caption").className + " | " + document.getElementById("bit-caption").textContent`); !strings.HasPrefix(c, "warn | ") || !strings.Contains(c, "Warning: timestamped 2095-09-07T15:47:35.551Z") {
		t.Errorf("a future ID's caption: %q; want it marked warn and saying when the ID is dated", c)
	}

	// A phone's width: nothing scrolls sideways but the fleet table's own
	// box.
	step("a 390 px viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		poll(`document.documentElement.scrollWidth <= 390`))
	save("status-phone.png", chromedp.FullScreenshot(100))

	requests, errs := log.snapshot()
	for _, e := range errs {
		t.Errorf("console: %s", e)
	}
	if len(requests) < 4 {
		t.Errorf("the page made %d requests, want at least the page, its assets and a poll: %q", len(requests), requests)
	}
	for _, u := range requests {
		if !strings.HasPrefix(u, a.admin+"/") {
			t.Errorf("the page asked for %s, outside its server %s", u, a.admin)
		}
	}
	if t.Failed() {
		fmt.Fprintf(os.Stderr, "requests: %q\n", requests)
	}
	b.stop(t)
	a.stop(t)
}
