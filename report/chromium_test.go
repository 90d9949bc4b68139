package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/bench"
)

// chromiumTimeout bounds one Chromium run; a page that draws in a browser
// takes a second or two even on a loaded two-core machine.
const chromiumTimeout = 90 * time.Second

// aptTimeout bounds installing Chromium (apt may wait for another
// process's lock first).
const aptTimeout = 15 * time.Minute

// chromium returns the path of a Chromium binary, installing Debian's
// package when missing and running as root. Without one, the test fails in
// CI (CI=true) and is skipped elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	why := "chromium is not installed and this test is not root, so it cannot install it"
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("apt-get"); err != nil {
			why = "chromium is not installed and there is no apt-get to install it"
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), aptTimeout)
			defer cancel()
			var out bytes.Buffer
			for _, args := range [][]string{
				{"-o", "DPkg::Lock::Timeout=600", "update", "-q"},
				{"-o", "DPkg::Lock::Timeout=600", "install", "-y", "-q", "--no-install-recommends", "chromium"},
			} {
				cmd := exec.CommandContext(ctx, "apt-get", args...)
				cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Run(); err != nil {
					why = "installing chromium with apt-get failed: " + err.Error() + "\n" + tail(out.String(), 2000)
					break
				}
			}
			if p, err := exec.LookPath("chromium"); err == nil {
				return p
			}
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// runChromium runs headless Chromium on a local file with a fresh profile
// and no network features, and returns its standard output.
func runChromium(t *testing.T, bin, page string, extra ...string) string {
	t.Helper()
	profile := t.TempDir()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio",
		"--user-data-dir=" + profile,
		// Lets the page's timers and animation frames run before the dump
		// or screenshot, without waiting in real time.
		"--virtual-time-budget=10000",
	}, extra...)
	args = append(args, "file://"+page)
	ctx, cancel := context.WithTimeout(context.Background(), chromiumTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	// Chromium forks helpers; put them in one process group and end the
	// whole group, so none outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, tail(stderr.String(), 3000))
	}
	return stdout.String()
}

var (
	htmlTagRE  = regexp.MustCompile(`<html[^>]*>`)
	attrRE     = regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
	chartDivRE = regexp.MustCompile(`<div class="chart[^"]*" id="([^"]+)" data-chart="[^"]*"([^>]*)>`)
)

func attrs(tag string) map[string]string {
	m := map[string]string{}
	for _, a := range attrRE.FindAllStringSubmatch(tag, -1) {
		m[a[1]] = a[2]
	}
	return m
}

// checkDrawn opens page in Chromium, reads the self-check the page's
// script writes onto <html> and every chart container, and takes a
// screenshot. It returns the screenshot's path.
func checkDrawn(t *testing.T, bin, page string, wantCharts int) string {
	t.Helper()
	dom := runChromium(t, bin, page, "--dump-dom", "--window-size=1280,1000")
	root := attrs(htmlTagRE.FindString(dom))
	if root["data-ready"] != "true" {
		t.Fatalf("the page's script did not finish: <html> attributes %v", root)
	}
	for key, want := range map[string]string{
		"data-resources":      "0", // no request left the page
		"data-csp-violations": "0", // and none was tried and refused
		"data-js-errors":      "0",
		"data-charts":         strconv.Itoa(wantCharts),
		"data-charts-drawn":   strconv.Itoa(wantCharts),
	} {
		if root[key] != want {
			t.Errorf("%s = %q, want %q (problems: %q)", key, root[key], want, root["data-problems"])
		}
	}
	charts := chartDivRE.FindAllStringSubmatch(dom, -1)
	if len(charts) != wantCharts {
		t.Errorf("found %d chart containers in the DOM, want %d", len(charts), wantCharts)
	}
	for _, c := range charts {
		a := attrs(c[2])
		for _, k := range []string{"data-canvas-width", "data-canvas-height", "data-colored-pixels"} {
			if n, err := strconv.Atoi(a[k]); err != nil || n <= 0 {
				t.Errorf("chart %s: %s = %q, want > 0", c[1], k, a[k])
			}
		}
	}

	shot := strings.TrimSuffix(page, ".html") + ".png"
	runChromium(t, bin, page, "--screenshot="+shot, "--window-size=1280,2400", "--hide-scrollbars")
	fh, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer fh.Close()
	img, err := png.Decode(fh)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2400 {
		t.Errorf("screenshot is %v, want 1280x2400", b)
	}
	// A page that rendered has text, tables and coloured series: many
	// distinct colours. A blank or error page has a handful.
	colours := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[(r>>11)<<10|(g>>11)<<5|bl>>11] = true
		}
	}
	if len(colours) < 50 {
		t.Errorf("screenshot has %d distinct colours: the page looks blank", len(colours))
	}
	t.Logf("screenshot: %s", shot)
	return shot
}

func writePage(t *testing.T, dir, name string, f *bench.ResultsFile) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(render(t, f)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReportDrawsInChromium(t *testing.T) {
	bin := chromium(t)
	dir := keepDir(t)
	// 7 throughput + 7 spectrum charts (all runs, four workers and two rate
	// sweep points), 4 sweep curves.
	checkDrawn(t, bin, writePage(t, dir, "fixture.html", fixtureResults(t)), 18)
}

// TestHostileReportInChromium proves escaping in a real browser: markup and
// script in every string of the results file neither run nor break the
// page (a script that ran would be refused by the CSP and counted).
func TestHostileReportInChromium(t *testing.T) {
	bin := chromium(t)
	dir := keepDir(t)
	page := writePage(t, dir, "hostile.html", hostileResults(t))
	dom := runChromium(t, bin, page, "--dump-dom", "--window-size=1280,1000")
	root := attrs(htmlTagRE.FindString(dom))
	if root["data-ready"] != "true" || root["data-csp-violations"] != "0" || root["data-js-errors"] != "0" {
		t.Errorf("hostile strings disturbed the page: %v", root)
	}
	if strings.Contains(dom, "<title>pwned") || strings.Contains(dom, "<img src=\"x\"") {
		t.Error("hostile markup became part of the DOM")
	}
}
