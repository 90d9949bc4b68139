package benchsvc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeHistory writes n finished run records into dir, as a previous
// service left them, oldest first, and returns their ids in that order.
func writeHistory(t *testing.T, dir string, n int) []string {
	t.Helper()
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := make([]string, n)
	for i := range n {
		created := epoch.Add(time.Duration(i) * time.Second)
		finished := created.Add(time.Millisecond)
		ids[i] = fmt.Sprintf("%s-%06x", created.Format("20060102-150405"), i)
		rec := Record{ID: ids[i], State: StateDone, Request: json.RawMessage(`{}`), Args: []string{"--duration=1s"}, Stores: []string{"embedded"},
			Created: created, Started: &created, Finished: &finished, Results: nil}
		data, err := json.Marshal(&rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run-"+ids[i]+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// TestHistoryTrimmedAtLoadAudit13: the history is bounded (historyMax),
// but a service loaded every record its data directory held and trimmed
// only at the next submit: a directory past the bound (an older build
// kept more, or records copied in) was served whole until then. Loading
// applies the bound: the oldest finished runs go, from memory and from
// the disk, the newest are kept.
func TestHistoryTrimmedAtLoadAudit13(t *testing.T) {
	dir := t.TempDir()
	const extra = 3
	ids := writeHistory(t, dir, historyMax+extra)
	p := &fakeParser{}
	s, err := New(Config{Parse: p.parse, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, err := s.List("", listLimitMax)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != historyMax {
		t.Errorf("a data directory of %d runs loads as a history of %d, want the bound, %d", len(ids), page.Total, historyMax)
	}
	for _, id := range ids[:extra] {
		if _, ok := s.Get(id); ok {
			t.Errorf("run %s, one of the %d oldest, is still in the history", id, extra)
		}
		if _, err := os.Stat(filepath.Join(dir, "run-"+id+".json")); !os.IsNotExist(err) {
			t.Errorf("run %s, trimmed, is still on disk (%v)", id, err)
		}
	}
	for _, id := range []string{ids[extra], ids[len(ids)-1]} {
		if _, ok := s.Get(id); !ok {
			t.Errorf("run %s, within the bound, is missing", id)
		}
	}
}

// listPage is GET /v1/runs's reply, decoded.
type listPage struct {
	Runs  []Summary `json:"runs"`
	Next  string    `json:"next"`
	Total int       `json:"total"`
}

func getList(t *testing.T, url string) (int, listPage, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var p listPage
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, data)
		}
	}
	return resp.StatusCode, p, string(data)
}

// TestHistoryPagedAudit13: GET /v1/runs answered the whole history (up
// to 10,000 runs with their headline figures) at every call, and the
// page asked for it every 3 s. It answers a page now: the newest 100 by
// default, ?limit= up to 1000, and ?before=<id> (the reply's next) for
// the page after; walking the pages gives every run once, newest first,
// even when a run is submitted between two pages. A bad limit or an
// unknown before is a 400 saying so.
func TestHistoryPagedAudit13(t *testing.T) {
	dir := t.TempDir()
	ids := writeHistory(t, dir, 250)
	s, srv, _ := newTestService(t, Config{DataDir: dir})
	code, first, body := getList(t, srv.URL+"/v1/runs")
	if code != http.StatusOK || len(first.Runs) != listLimitDefault || first.Total != len(ids) || first.Next == "" {
		t.Fatalf("GET /v1/runs: %d, %d runs of %d, next %q, want the newest %d, a total of %d and a next page\n%.300s",
			code, len(first.Runs), first.Total, first.Next, listLimitDefault, len(ids), body)
	}
	// A run submitted between two pages goes on the first; the walk goes on.
	if _, err := s.Submit(json.RawMessage(`{}`), []string{"--duration=1ms"}); err != nil {
		t.Fatal(err)
	}
	var walked []string
	for _, r := range first.Runs {
		walked = append(walked, r.ID)
	}
	next := first.Next
	for pages := 1; next != ""; pages++ {
		if pages > 10 {
			t.Fatalf("more than 10 pages of 100 for %d runs", len(ids))
		}
		code, p, body := getList(t, srv.URL+"/v1/runs?limit=100&before="+next)
		if code != http.StatusOK {
			t.Fatalf("page after %s: %d %s", next, code, body)
		}
		for _, r := range p.Runs {
			walked = append(walked, r.ID)
		}
		next = p.Next
	}
	want := slices.Clone(ids)
	slices.Reverse(want)
	if !slices.Equal(walked, want) {
		t.Errorf("walking the pages gave %d runs, want the %d, newest first, each once", len(walked), len(want))
	}
	if code, p, _ := getList(t, srv.URL+"/v1/runs?limit=1000"); code != http.StatusOK || len(p.Runs) != len(ids)+1 || p.Next != "" {
		t.Errorf("limit=1000: %d, %d runs, next %q: want all %d and no next page", code, len(p.Runs), p.Next, len(ids)+1)
	}
	for _, q := range []string{"limit=0", "limit=-1", "limit=1001", "limit=ten", "limit=", "before=", "before=20260101-000000-nope"} {
		code, _, body := getList(t, srv.URL+"/v1/runs?"+q)
		name, _, _ := strings.Cut(q, "=")
		if code != http.StatusBadRequest || !strings.Contains(body, `"invalid"`) || !strings.Contains(body, name) {
			t.Errorf("GET /v1/runs?%s: %d %s, want a 400 naming %s", q, code, body, name)
		}
	}
}

// TestPageHistoryPagedAudit13 runs the page's own script in node (as
// TestPageReconnectsEventStreamAudit13 does) against a service with 150
// runs. The page asked for the whole history every 3 s. It asks for a
// page now, shows the newest 100 and offers older runs; asked for them,
// it shows all 150 and offers no more. No request of its is unpaged.
func TestPageHistoryPagedAudit13(t *testing.T) {
	node := nodeOrSkip(t)
	dir := t.TempDir()
	ids := writeHistory(t, dir, 150)
	s, _, _ := newTestService(t, Config{DataDir: dir})
	var mu sync.Mutex
	var lists []string // the query of each GET /v1/runs
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/runs" {
			mu.Lock()
			lists = append(lists, r.URL.RawQuery)
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, filepath.Join("testdata", "page_history_harness.js"), srv.URL, "page.js").Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var page struct {
		Rows      int    `json:"rows"`
		More      bool   `json:"more"`
		RowsAfter int    `json:"rowsAfter"`
		MoreAfter bool   `json:"moreAfter"`
		Total     int    `json:"total"`
		Error     string `json:"error"`
	}
	if err := json.Unmarshal(out, &page); err != nil {
		t.Fatalf("the harness printed %q: %v", out, err)
	}
	if page.Error != "" {
		t.Fatalf("%s (%s)", page.Error, out)
	}
	if page.Rows != listLimitDefault || !page.More || page.Total != len(ids) {
		t.Errorf("the page first shows %d runs of %d (older runs offered: %v), want the newest %d of %d and older ones offered", page.Rows, page.Total, page.More, listLimitDefault, len(ids))
	}
	if page.RowsAfter != len(ids) || page.MoreAfter {
		t.Errorf("asked for older runs, the page shows %d (more offered: %v), want all %d and no more", page.RowsAfter, page.MoreAfter, len(ids))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, q := range lists {
		if !strings.Contains(q, "limit=") {
			t.Errorf("the page asked for GET /v1/runs?%s: unpaged", q)
		}
	}
}
