package benchsvc

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html/template"
	"net/http"
	"strings"
	"sync"

	"allot/report"
)

var (
	//go:embed page.html
	pageHTML string
	//go:embed page.js
	pageJS string
	//go:embed page.css
	pageCSS string
)

// page is rendered once: it holds no data, it fetches it from the API.
var page struct {
	once sync.Once
	html []byte
	csp  string
	err  error
}

func scriptHash(js string) string {
	sum := sha256.Sum256([]byte(js))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

func renderPage() {
	uplot := report.UPlotJS()
	for _, js := range []string{uplot, pageJS} {
		if strings.Contains(strings.ToLower(js), "</script") {
			page.err = errString("benchsvc: a page script contains </script")
			return
		}
	}
	// The page talks to its own origin only (connect-src 'self') and
	// shows reports in a frame from it. Nothing else loads.
	page.csp = "default-src 'none'; script-src " + scriptHash(uplot) + " " + scriptHash(pageJS) +
		"; style-src 'unsafe-inline'; connect-src 'self'; frame-src 'self'; img-src data:; base-uri 'none'; form-action 'none'"
	t, err := template.New("page").Parse(pageHTML)
	if err != nil {
		page.err = err
		return
	}
	var b bytes.Buffer
	page.err = t.Execute(&b, struct {
		UPlotJS, PageJS template.JS
		CSS             template.CSS
	}{template.JS(uplot), template.JS(pageJS), template.CSS(report.UPlotCSS() + "\n" + pageCSS)})
	page.html = b.Bytes()
}

type errString string

func (e errString) Error() string { return string(e) }

func (s *Service) servePage(w http.ResponseWriter, r *http.Request) {
	page.once.Do(renderPage)
	if page.err != nil {
		writeError(w, http.StatusInternalServerError, "internal", page.err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", page.csp+"; frame-ancestors 'none'")
	// No other site may frame the page and trick a click on Start.
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(page.html)
}
