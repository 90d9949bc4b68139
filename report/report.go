package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"

	"allot/bench"
)

// WriteHTML writes the report of f to w as one self-contained HTML page. It
// renders into memory first, so on error w receives nothing.
func WriteHTML(w io.Writer, f *bench.ResultsFile) error {
	if err := Validate(f); err != nil {
		return err
	}
	for _, a := range []struct{ name, text, closing string }{
		{"uPlot.iife.min.js", uPlotJS, "</script"},
		{"guard.js", guardJS, "</script"},
		{"report.js", reportJS, "</script"},
		{"uPlot.min.css", uPlotCSS, "</style"},
		{"report.css", reportCSS, "</style"},
	} {
		if err := checkInlineSafe(a.name, a.text, a.closing); err != nil {
			return err
		}
	}
	tmpl, err := template.New("report").Parse(pageTemplate)
	if err != nil {
		return fmt.Errorf("report: parsing page template: %w", err)
	}
	p, charts := newPage(f)
	// json.Marshal escapes <, > and & (and U+2028/9), so the data cannot
	// close its <script> element or open a comment whatever the strings in
	// the results file hold.
	data, err := json.Marshal(charts)
	if err != nil {
		return fmt.Errorf("report: encoding chart data: %w", err)
	}
	var buf bytes.Buffer
	err = tmpl.Execute(&buf, struct {
		P        *page
		Charts   *chartSet
		Data     template.JS
		GuardJS  template.JS
		UPlotJS  template.JS
		ReportJS template.JS
		CSS      template.CSS
	}{
		P:        p,
		Charts:   charts,
		Data:     template.JS(data),
		GuardJS:  template.JS(guardJS),
		UPlotJS:  template.JS(uPlotJS),
		ReportJS: template.JS(reportJS),
		CSS:      template.CSS(uPlotCSS + "\n" + reportCSS),
	})
	if err != nil {
		return fmt.Errorf("report: rendering page: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report: writing page: %w", err)
	}
	return nil
}
