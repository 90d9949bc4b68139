package report

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"strings"
)

// The charting library is uPlot (github.com/leeoniya/uPlot, MIT licence),
// version uPlotVersion, copied unmodified from the npm package's
// dist/uPlot.iife.min.js and dist/uPlot.min.css, with its LICENSE beside it.
//
// Why uPlot: the page carries its library inline, so size matters, and
// uPlot's minified build is about 51 KB against about 205 KB for Chart.js 4
// (chart.umd.min.js), the other maintained candidate; it draws on canvas,
// which stays fast with the thousands of points of a long throughput series
// or a fine percentile grid where an SVG library creates one DOM node per
// point; it has logarithmic scales (base 10 and 2) with caller-chosen tick
// positions and labels, which is exactly what an HDR percentile axis (0%,
// 90%, 99%, 99.9%, ...) and a workers=1,4,16,64 sweep need; and it has no
// dependencies and makes no requests of its own. Rejected: Chart.js (four
// times the bytes for features the report does not use), and plotting
// libraries that fetch fonts or modules at run time (they break offline).
//
// To update: npm pack uplot@<version>, copy the two dist files and LICENSE
// into assets/, change uPlotVersion, and run the package tests (the
// Chromium test proves the page still draws under the CSP).
const uPlotVersion = "1.6.32"

var (
	//go:embed assets/uPlot.iife.min.js
	uPlotJS string
	//go:embed assets/uPlot.min.css
	uPlotCSS string
	//go:embed assets/uPlot.LICENSE
	uPlotLicense string
	//go:embed guard.js
	guardJS string
	//go:embed report.js
	reportJS string
	//go:embed report.css
	reportCSS string
	//go:embed report.html.tmpl
	pageTemplate string
)

// scriptHash is the CSP source expression allowing exactly one inline script.
func scriptHash(js string) string {
	sum := sha256.Sum256([]byte(js))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// contentSecurityPolicy forbids every fetch (default-src 'none') and every
// script but the three inlined ones. Styles may be inline because uPlot
// positions its elements with style attributes.
func contentSecurityPolicy() string {
	return "default-src 'none'; script-src " + scriptHash(guardJS) + " " + scriptHash(uPlotJS) + " " + scriptHash(reportJS) +
		"; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
}

// checkInlineSafe reports an asset that would end its own <script> or
// <style> element early when inlined. It guards library updates.
func checkInlineSafe(name, text, closing string) error {
	lower := strings.ToLower(text)
	if strings.Contains(lower, closing) || strings.Contains(lower, "<!--") {
		return fmt.Errorf("report: asset %s contains %q or \"<!--\" and cannot be inlined", name, closing)
	}
	return nil
}
