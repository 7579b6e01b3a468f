//go:build e2e

package main

// The live view in a real browser: a real server (the syndicate-server
// binary, with daemons), `syndicate ui` as a user runs it, and headless
// Chromium driven through the DevTools protocol (chromedp). Outside CI the
// test skips when no browser is installed; under CI=true (.ci/run installs
// Debian's chromium) a missing browser fails it.

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/syndicate-go/syndicate/preserves/testutil"
)

var screenshots = flag.String("ui.screenshots", "", "save the browser test's screenshots in `DIR` (default: a temporary directory)")

// hostileName is a daemon name that is markup, and hostileOutput a line
// that is: the page must show both as text.
const (
	hostileName   = `<img src=x onerror=window.pwned=1>`
	hostileOutput = `<script>window.pwned=2</script><b>bold</b>`
)

// browserPath finds Chromium, or skips (fails under CI=true).
func browserPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testutil.Missing(t, "no Chromium installed (apt-get install chromium)")
	return ""
}

// uiServer runs the real server binary with a few daemons until the test
// ends (stopped with SIGTERM, so its daemons go with it).
func uiServer(t *testing.T, dir string) (sock string) {
	bin := filepath.Join(dir, "syndicate-server")
	build := exec.Command("go", "build", "-o", bin, "../syndicate-server")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building syndicate-server: %s", out)
	etc := filepath.Join(dir, "etc")
	require.NoError(t, os.Mkdir(etc, 0o755))
	q := strconv.Quote
	boot := strings.Join([]string{
		`<require-service <daemon web>>`,
		`<daemon web {argv: ["sh" "-c" "echo serving on :8080; exec sleep 600"]}>`,
		`<require-service <daemon app>>`,
		`<depends-on <daemon app> <service-state <daemon web> ready>>`,
		`<daemon app {argv: ["sh" "-c" "echo app started; exec sleep 600"]}>`,
		`<require-service <daemon crasher>>`,
		`<daemon crasher {argv: ["sh" "-c" ` + q("echo up; while [ ! -e "+filepath.Join(dir, "crash")+" ]; do sleep 0.05; done; echo crashing >&2; exit 3") + `]}>`,
		`<require-service <daemon ` + q(hostileName) + `>>`,
		`<daemon ` + q(hostileName) + ` {argv: ["sh" "-c" ` + q("echo '"+hostileOutput+"'; exec sleep 600") + `]}>`,
	}, "\n")
	require.NoError(t, os.WriteFile(filepath.Join(etc, "boot.pr"), []byte(boot+"\n"), 0o644))
	sock = filepath.Join(dir, "admin.sock")
	var stderr testutil.Buffer
	cmd := exec.Command(bin, "--no-banner", "--log-format", "json", "--admin-socket", sock, "-c", etc)
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	testutil.WaitFor(t, "the server", func() bool { return strings.Contains(stderr.String(), `"message":"server running"`) })
	return sock
}

// page drives one browser tab.
type page struct {
	t   *testing.T
	ctx context.Context
	dir string // where screenshots go

	mu     sync.Mutex
	errors []string // JavaScript exceptions and console errors
}

func (p *page) run(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	require.NoError(p.t, chromedp.Do(p.ctx, actions...))
}

// eval evaluates a JavaScript expression.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	require.NoError(p.t, err, "evaluating %s", expr)
	return v
}

func (p *page) js(expr string) { eval[any](p, "void ("+expr+")") }

func (p *page) str(expr string) string { return eval[string](p, expr) }

// waitJS polls a boolean expression.
func (p *page) waitJS(what, expr string) {
	p.t.Helper()
	start := time.Now()
	testutil.WaitFor(p.t, what, func() bool { return eval[bool](p, expr) })
	p.t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), what)
}

func (p *page) screenshot(name string) { p.shoot(name, chromedp.CaptureScreenshot()) }

// screenshotPage takes the whole page, beyond the window.
func (p *page) screenshotPage(name string) { p.shoot(name, chromedp.FullScreenshot(100)) }

func (p *page) shoot(name string, a chromedp.Action[[]byte]) {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, a)
	require.NoError(p.t, err)
	path := filepath.Join(p.dir, name+".png")
	require.NoError(p.t, os.WriteFile(path, png, 0o644))
	p.t.Logf("screenshot %s (%d bytes)", path, len(png))
}

// noOverflow checks the page fits its width (no horizontal scrolling).
func (p *page) noOverflow(view string) {
	p.t.Helper()
	w := eval[[2]int](p, `[document.documentElement.scrollWidth, window.innerWidth]`)
	require.LessOrEqual(p.t, w[0], w[1], "%s overflows horizontally at %d px", view, w[1])
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// row is a JS expression for the services table's row of name.
func row(name string) string {
	return `[...document.querySelectorAll("#services tr[data-name]")].find(r => r.dataset.name === ` + jsString(name) + `)`
}

func cell(name string, i int) string {
	return `(` + row(name) + `?.children[` + strconv.Itoa(i) + `]?.textContent ?? "")`
}

func TestUIInBrowser(t *testing.T) {
	chrome := browserPath(t)
	dir := t.TempDir()
	shots := *screenshots
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))
	sock := uiServer(t, dir)

	ui := startCLI("--admin", sock, "ui", "--listen", "127.0.0.1:0")
	t.Cleanup(func() {
		ui.stop(t)
		if t.Failed() {
			t.Logf("syndicate ui: %s%s", ui.out.String(), ui.err.String())
		}
	})
	re := regexp.MustCompile(`http://\S+/\?token=\S+`)
	testutil.WaitFor(t, "the URL", func() bool { return re.MatchString(ui.out.String()) })
	pageURL := re.FindString(ui.out.String())
	u, err := url.Parse(pageURL)
	require.NoError(t, err)
	base := "http://" + u.Host

	refusesWithoutToken(t, base)

	p := headlessPage(t, chrome, shots)
	p.run(chromedp.Navigate(pageURL))

	// The table: a daemon's row appears, with a pid; built-ins are
	// hidden until asked for.
	p.waitJS("the row of <daemon web> with a pid", cell("<daemon web>", 3)+` !== "" && `+cell("<daemon web>", 3)+` !== "-"`)
	p.waitJS("<daemon app> ready", cell("<daemon app>", 1)+`.includes("ready")`)
	require.Equal(t, "", p.str(`location.search`), "the token stays out of the address bar")
	builtins := eval[int](p, `document.querySelectorAll('#services tr[data-name^="<builtin "]').length`)
	require.Zero(t, builtins, "built-ins are hidden by default")
	hostile(t, p)
	p.screenshot("ui-services")

	// A crash changes the row.
	p.waitJS("<daemon crasher> ready", cell("<daemon crasher>", 1)+`.includes("ready")`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "crash"), nil, 0o644))
	p.waitJS("<daemon crasher> backing off", `!`+cell("<daemon crasher>", 1)+`.includes("ready") && `+cell("<daemon crasher>", 1)+`.includes("backoff")`)
	p.waitJS("its last exit", cell("<daemon crasher>", 5)+`.includes("exit status: 3")`)
	require.NoError(t, os.Remove(filepath.Join(dir, "crash")))

	// The filter.
	p.run(chromedp.SendKeys(chromedp.CSS("#filter"), "crash"))
	p.waitJS("the filter", `document.querySelectorAll("#services tr[data-name]").length === 1`)
	p.js(`(f => { f.value = ""; f.dispatchEvent(new Event("input")) })(document.getElementById("filter"))`)

	// A service page: restart with confirmation, and the pid changes.
	p.js(`location.hash = "#/service/" + encodeURIComponent("<daemon web>")`)
	p.waitJS("the pid of <daemon web>", `/^\d+$/.test(document.getElementById("pid")?.textContent ?? "")`)
	p.waitJS("its output", `document.getElementById("output").textContent.includes("serving on :8080")`)
	p.waitJS("its lifecycle", `document.getElementById("events").textContent.includes("<service-state ready>")`)
	p.waitJS("the restart button", `!document.getElementById("restart").disabled`)
	oldPID := p.str(`document.getElementById("pid").textContent`)
	p.run(chromedp.Click(chromedp.CSS("#restart")))
	p.waitJS("the confirmation", `document.getElementById("confirm-yes") !== null`)
	p.run(chromedp.Click(chromedp.CSS("#confirm-yes")))
	p.waitJS("a new pid", `/^\d+$/.test(document.getElementById("pid").textContent) && document.getElementById("pid").textContent !== `+jsString(oldPID))
	p.waitJS("the output of the new process", `document.getElementById("output").textContent.split("serving on :8080").length > 2`)
	p.waitJS("the lifecycle events in the log", `document.getElementById("output").textContent.includes("syndicate: restart")`)
	p.screenshotPage("ui-service")

	stopAndStart(p)

	// The hostile daemon's page.
	p.js(`location.hash = "#/service/" + encodeURIComponent(` + jsString(`<daemon `+strconv.Quote(hostileName)+`>`) + `)`)
	p.waitJS("the hostile output as text", `document.getElementById("output").textContent.includes(`+jsString(hostileOutput)+`)`)
	hostile(t, p)

	// The boot: timeline and graph.
	p.js(`location.hash = "#/boot"`)
	p.waitJS("the timeline", `document.querySelectorAll("#timeline rect").length >= 4`)
	p.waitJS("the graph's edge", `document.querySelectorAll("#graph line").length >= 1`)
	p.screenshot("ui-boot")

	dataspaceBrowser(t, p, sock)

	// Phone-sized: nothing wider than the screen.
	p.run(chromedp.EmulateViewport(375, 740))
	for _, view := range []string{"#/services", "#/service/" + url.PathEscape("<daemon app>"), "#/boot", "#/dataspace?p=" + url.QueryEscape("<service-state _ _>")} {
		p.js(`location.hash = ` + jsString(view))
		p.waitJS("the view "+view, `document.getElementById("main").children.length > 2`)
		p.noOverflow(view)
	}
	p.js(`location.hash = "#/services"`)
	p.waitJS("the table", row("<daemon web>")+` !== undefined`)
	p.noOverflow("services")
	p.screenshot("ui-phone")

	p.mu.Lock()
	require.Empty(t, p.errors, "JavaScript errors")
	p.mu.Unlock()
}

// headlessPage starts headless Chromium (chrome) for the test, its
// screenshots going to shots, and collects the page's JavaScript errors.
// The browser goes when the test ends.
func headlessPage(t *testing.T, chrome, shots string) *page {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.Headless, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(900, 560))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancelT)
	p := &page{t: t, ctx: ctx, dir: shots}
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				p.mu.Lock()
				p.errors = append(p.errors, m.String())
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// stopAndStart stops and starts <daemon crasher> from its page, each
// confirmed.
func stopAndStart(p *page) {
	// Stop and start, each confirmed, on a daemon nothing depends on.
	p.js(`location.hash = "#/service/" + encodeURIComponent("<daemon crasher>")`)
	p.waitJS("<daemon crasher> running again", `/^\d+$/.test(document.getElementById("pid")?.textContent ?? "") && !document.getElementById("stop").disabled`)
	p.run(chromedp.Click(chromedp.CSS("#stop")))
	p.waitJS("the confirmation", `document.getElementById("confirm-yes") !== null`)
	p.run(chromedp.Click(chromedp.CSS("#confirm-yes")))
	p.waitJS("<daemon crasher> stopped", `document.getElementById("state").textContent.includes("stopped") && document.getElementById("pid").textContent === "-"`)
	p.waitJS("the start button", `!document.getElementById("start").disabled`)
	p.run(chromedp.Click(chromedp.CSS("#start")))
	p.waitJS("the confirmation", `document.getElementById("confirm-yes") !== null`)
	p.run(chromedp.Click(chromedp.CSS("#confirm-yes")))
	p.waitJS("<daemon crasher> started", `!document.getElementById("state").textContent.includes("stopped") && /^\d+$/.test(document.getElementById("pid").textContent)`)
}

// dataspaceBrowser observes a pattern in the dataspace browser: an
// assertion appears, then vanishes, and a message shows.
func dataspaceBrowser(t *testing.T, p *page, sock string) {
	// The dataspace browser: an assertion appears, then vanishes.
	p.js(`location.hash = "#/dataspace"`)
	p.run(chromedp.SendKeys(chromedp.CSS("#pattern"), `<ui-probe _>`), chromedp.Click(chromedp.CSS("#observe")))
	p.waitJS("the subscription", `document.getElementById("observe-status").textContent.startsWith("0 matching")`)
	probe := startCLI("--admin", sock, "assert", `<ui-probe "hello">`)
	p.waitJS("the assertion", `[...document.querySelectorAll("#matches li")].some(li => li.textContent === '<ui-probe "hello">')`)
	p.screenshot("ui-dataspace")
	probe.stop(t)
	p.waitJS("the retraction", `document.querySelectorAll("#matches li").length === 0`)
	code, _, errs := cliRun(t, "--admin", sock, "send", `<ui-probe "flash">`)
	require.Zero(t, code, errs)
	p.waitJS("the message", `document.getElementById("messages").textContent.includes('<ui-probe "flash">')`)
}

// hostile checks that the hostile name and output were rendered as text:
// no element of theirs exists, no handler of theirs ran.
func hostile(t *testing.T, p *page) {
	t.Helper()
	p.waitJS("the hostile name as text", `document.getElementById("main").textContent.includes(`+jsString(hostileName)+`)`)
	n := eval[int](p, `document.querySelectorAll("main img, main script, main b").length`)
	require.Zero(t, n, "markup from the server became elements")
	require.Equal(t, "undefined", p.str(`typeof window.pwned`))
}

// refusesWithoutToken checks the page's doors: no token, no page; a change
// needs the page's Origin and Host.
func refusesWithoutToken(t *testing.T, base string) {
	for _, path := range []string{"/", "/app.js", "/events/services", "/api/pattern?pattern=_"} {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "GET %s without the token", path)
	}
	resp, err := http.PostForm(base+"/api/restart", url.Values{"name": {"<daemon web>"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "POST without the token")
}
