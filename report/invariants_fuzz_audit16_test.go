package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// pageTags are the elements the page's template writes. Any other tag in
// the page (outside its scripts and styles) came from the results file.
var pageTags = map[string]bool{
	"html": true, "head": true, "meta": true, "title": true, "script": true, "style": true, "body": true, "main": true,
	"h1": true, "h2": true, "h3": true, "p": true, "code": true, "nav": true, "a": true, "div": true, "section": true,
	"table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true, "span": true, "br": true, "strong": true,
	"ul": true, "li": true, "footer": true, "details": true, "summary": true, "pre": true,
}

var (
	scriptOrStyleRE = regexp.MustCompile(`(?s)(<script[^>]*>).*?</script>|(<style[^>]*>).*?</style>`)
	anyTagRE        = regexp.MustCompile(`</?([a-zA-Z][a-zA-Z0-9-]*)`)
	tableRowRE      = regexp.MustCompile(`<tr data-run="(\d+)" data-status="[^"]*">.*?<td>(<span class="pill (ok|bad)">)`)
	checkRE         = regexp.MustCompile(`<div class="check" data-run="(\d+)" data-check="([a-z_]+)">`)
)

// FuzzAudit16ReportInvariants: for any results file the report accepts,
// the page is the same bytes every time (no map order leaks into it), has
// no element the template does not write (a string from the file cannot
// become markup), and never calls a run passed in the table whose check
// entry does not say "check passed", nor draws the all-passed banner over
// a run that did not pass.
func FuzzAudit16ReportInvariants(f *testing.F) {
	good, err := json.Marshal(fixtureResults(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"version":1,"runs":[{"store":"redis","status":"ok","check":{"ok":false,"violations":["<b>x</b>"]}}]}`))
	f.Add([]byte(`{"version":1,"runs":[{"store":"a","status":"check_failed","check":{"ok":true}},{"store":"b","status":"failed","check":{"ok":true}}]}`))
	f.Add([]byte(`{"version":1,"environment":{"zz":"<i>","aa":1,"cores":2},"runs":[{"store":"</td><script>","status":"ok","errors":1,"check":{"ok":true},"extra":{"b":1,"a":"<x>"},"error_samples":["<img src=x>"]}]}`))
	f.Add([]byte(`{"version":1,"runs":[{"store":"x","status":"ok","check":{"ok":true},"sweep":{"param":"workers","value":2,"label":"<w>"}},{"store":"y","status":"ok","check":{"ok":true},"sweep":{"param":"rate","value":1,"label":"r"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rf, err := DecodeResults(bytes.NewReader(data))
		if err != nil {
			return
		}
		var a, b bytes.Buffer
		if err := WriteHTML(&a, rf); err != nil {
			t.Fatalf("WriteHTML of a decoded file: %v", err)
		}
		if err := WriteHTML(&b, rf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatal("two renderings of one file differ")
		}
		page := a.String()
		for _, m := range anyTagRE.FindAllStringSubmatch(scriptOrStyleRE.ReplaceAllString(page, "$1$2"), -1) {
			if !pageTags[strings.ToLower(m[1])] {
				t.Fatalf("the page holds a <%s> element the template does not write", m[1])
			}
		}
		checks := map[string]string{}
		for _, m := range checkRE.FindAllStringSubmatch(page, -1) {
			checks[m[1]] = m[2]
		}
		rows := tableRowRE.FindAllStringSubmatch(page, -1)
		if len(rows) != len(rf.Runs) || len(checks) != len(rf.Runs) {
			t.Fatalf("%d runs, %d table rows, %d check entries", len(rf.Runs), len(rows), len(checks))
		}
		passed := 0
		for _, m := range rows {
			if m[3] == "ok" {
				passed++
				if checks[m[1]] != "ok" {
					t.Errorf("run %s: the table says ok, its check entry says %s", m[1], checks[m[1]])
				}
			}
		}
		if allOK := strings.Contains(page, `<div class="banner ok">`); allOK != (passed == len(rf.Runs)) {
			t.Errorf("banner says all passed: %v; %d of %d runs ok in the table", allOK, passed, len(rf.Runs))
		}
	})
}
