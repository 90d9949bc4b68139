package benchsvc

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrailingTextRefusedAudit17: Args and ParseGenLoad asked dec.More
// whether the body held more than its object, and More reports no more
// for a stray } or ]. {"stores":["embedded"]}} was accepted (202), kept
// as the run's request, and then its record could not be encoded: GET
// /v1/runs/{id} answered 500 "encoding the reply failed" for good, and
// with a data directory the record never reached the disk. Such a body
// is a 400 saying what follows the object.
func TestTrailingTextRefusedAudit17(t *testing.T) {
	s, srv, _ := newTestService(t, Config{})
	for _, tc := range []struct{ path, body string }{
		{"/v1/runs", `{"stores":["embedded"]}}`},
		{"/v1/runs", `{"stores":["embedded"]} ]`},
		{"/v1/runs", `{"stores":["embedded"]} {}`},
		{"/test/gen-load/embedded", `{"timeInMilis":10,"requestType":"READ"}}`},
		{"/test/gen-load/embedded", "{\"timeInMilis\":10,\"requestType\":\"READ\"}\n]"},
	} {
		code, m := do(t, "POST", srv.URL+tc.path, tc.body)
		if code == http.StatusBadRequest {
			if d := fmt.Sprint(m["detail"]); !strings.Contains(d, "more than one JSON value") {
				t.Errorf("POST %s %s: detail %q does not say what is wrong", tc.path, tc.body, d)
			}
			continue
		}
		t.Errorf("POST %s %s: %d %v, want 400", tc.path, tc.body, code, m)
		if id, ok := m["id"].(string); ok {
			waitState(t, s, id)
			code, m := do(t, "GET", srv.URL+"/v1/runs/"+id, "")
			t.Errorf("  and then GET /v1/runs/%s: %d %v", id, code, m)
		}
	}
	// White space after the object is fine.
	for _, body := range []string{"{\"stores\":[\"embedded\"]} \n\t", "\n{\"stores\":[\"embedded\"]}\r\n"} {
		code, m := do(t, "POST", srv.URL+"/v1/runs", body)
		if code != http.StatusAccepted {
			t.Fatalf("POST /v1/runs %q: %d %v, want 202", body, code, m)
		}
		id := m["id"].(string)
		waitState(t, s, id)
		if code, m := do(t, "GET", srv.URL+"/v1/runs/"+id, ""); code != http.StatusOK {
			t.Errorf("GET /v1/runs/%s: %d %v", id, code, m)
		}
	}
}

// TestObjectValueMessageAudit17: a field given an object was refused
// with Go's name for it: "a map[string]interface {} is not a parameter
// value". The message speaks JSON.
func TestObjectValueMessageAudit17(t *testing.T) {
	_, srv, _ := newTestService(t, Config{})
	code, m := do(t, "POST", srv.URL+"/v1/runs", `{"preset":{"a":1}}`)
	d := fmt.Sprint(m["detail"])
	if code != http.StatusBadRequest || !strings.Contains(d, `"preset"`) || !strings.Contains(d, "an object") || strings.Contains(d, "map[") {
		t.Errorf(`{"preset":{"a":1}}: %d %q, want a 400 naming the field and saying an object is no value`, code, d)
	}
}

// TestRecordUnderAnotherNameSkippedAudit17: load took a record's id from
// its content, whatever the file's name. A copy of run-<id>.json kept
// beside it (run-<id>-copy.json) made the run twice in the history:
// listed twice, and past historyMax the trim found the second one gone
// and panicked, in New. A record is read only from its own file name.
func TestRecordUnderAnotherNameSkippedAudit17(t *testing.T) {
	dir := t.TempDir()
	ids := writeHistory(t, dir, historyMax+1)
	data, err := os.ReadFile(filepath.Join(dir, "run-"+ids[0]+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run-"+ids[0]+"-copy.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	p := &fakeParser{}
	var s *Service
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("New panicked on a data directory holding a copy of a record: %v", v)
			}
		}()
		s, err = New(Config{Parse: p.parse, DataDir: dir, Log: log})
	}()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, err := s.List("", listLimitMax)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != historyMax {
		t.Errorf("history holds %d runs, want %d", page.Total, historyMax)
	}
	seen := map[string]bool{}
	for _, r := range page.Runs {
		if seen[r.ID] {
			t.Errorf("run %s listed twice", r.ID)
		}
		seen[r.ID] = true
	}
	if !strings.Contains(log.String(), "-copy.json") {
		t.Errorf("the log does not name the file skipped: %q", log.String())
	}
}
