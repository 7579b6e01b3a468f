package analyze

import (
	"bytes"
	"flag"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden pictures in testdata (and their PNG renderings)")

// goldenBoot is the sample boot plus what made the committed pictures
// hard to read (issue 26): a config watcher with a long name, and
// built-in services, which are most of the bars.
func goldenBoot(t *testing.T) *Boot {
	b := sampleBoot(t)
	for _, name := range []string{
		`<config-watcher "/etc/syndicate/a/rather/long/path/to/the/services.d" {config: #:ref gatekeeper: #:ref}>`,
		"<builtin gatekeeper>", "<builtin daemons>", "<builtin logger>",
	} {
		u := UnitOf(mustName(t, name), nil, 0)
		u.Requested, u.Run, u.Up, u.UpState, u.State = ms(1), ms(2), ms(3), "ready", "ready"
		b.Units[u.Key] = u
	}
	b.HideBuiltins()
	return b
}

// The pictures match their golden files (go test -update rewrites them);
// with -update each is also rendered to PNG by Chromium, so that it can be
// looked at (testdata/*.png). Without -update nothing would keep the
// rendering, and starting Chromium twice was most of the suite's time in
// this package.
func TestGoldenPictures(t *testing.T) {
	b := goldenBoot(t)
	for name, doc := range map[string]string{"plot.svg": PlotSVG(b), "graph.svg": GraphSVG(b)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			golden(t, name, doc)
		})
	}
}

func golden(t *testing.T, name, doc string) {
	{
		parseSVG(t, doc)
		require.NotContains(t, doc, "&lt;builtin", "built-ins hidden")
		path := filepath.Join("testdata", name)
		if *update {
			require.NoError(t, os.MkdirAll("testdata", 0o755))
			require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "go test -update writes %s", path)
		require.Equal(t, string(want), doc, "%s differs: go test -update", path)
		renderPNG(t, doc, strings.TrimSuffix(path, ".svg")+".png")
	}
}

// No label of the plot starts left of the picture: a long name is cut to
// fit (issue 26: the committed plot read `nfig-watcher …`).
func TestPlotLabelsFit(t *testing.T) {
	doc := PlotSVG(goldenBoot(t))
	re := regexp.MustCompile(`<text x="([0-9.]+)" y="[0-9.]+" text-anchor="end">([^<]*)<title>`)
	ms := re.FindAllStringSubmatch(doc, -1)
	require.NotEmpty(t, ms)
	for _, m := range ms {
		x, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		require.GreaterOrEqual(t, x-textWidth(html.UnescapeString(m[2])), 0.0, "label %q starts left of the picture", m[2])
	}
	require.Contains(t, doc, "…", "the long name is cut")
}

// renderPNG, under -update, draws the SVG with Chromium (under CI=true it
// must be there) and keeps the PNG at png.
func renderPNG(t *testing.T, doc, png string) {
	if !*update {
		return
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is needed to render the pictures: %v", err)
		}
		t.Logf("no chromium: %s not rendered", png)
		return
	}
	dir := t.TempDir()
	svg := filepath.Join(dir, "in.svg")
	require.NoError(t, os.WriteFile(svg, []byte(doc), 0o644))
	w, h := svgSize(t, doc)
	out := filepath.Join(dir, "out.png")
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+out,
		"--window-size="+strconv.Itoa(w)+","+strconv.Itoa(h), "file://"+svg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, []byte("\x89PNG")), "a PNG")
	require.NoError(t, os.WriteFile(png, data, 0o644))
}

// svgSize reads the root element's width and height.
func svgSize(t *testing.T, doc string) (w, h int) {
	m := regexp.MustCompile(`<svg[^>]* width="([0-9.]+)" height="([0-9.]+)"`).FindStringSubmatch(doc)
	require.NotNil(t, m, "an svg element with a size")
	fw, _ := strconv.ParseFloat(m[1], 64)
	fh, _ := strconv.ParseFloat(m[2], 64)
	return int(fw + 0.5), int(fh + 0.5)
}
