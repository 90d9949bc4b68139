package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// A run whose check passed but some of whose ops failed printed
// "FAILED (errors)" in the table while its JSON said "status": "ok" and
// "check": {"ok": true}, with nothing to tell a machine it failed. The
// JSON has "failed", the same verdict as the table's and the exit code's
// (Result.Failed), in a single run and in a results file.
func TestAudit12JSONSaysFailedWhenTheTableDoes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      Result
		failed bool
		word   string
	}{
		{"ops failed", Result{Store: "postgres", Status: StatusOK, Errors: 2, Check: CheckResult{OK: true}}, true, "FAILED (errors)"},
		{"passed", Result{Store: "postgres", Status: StatusOK, Check: CheckResult{OK: true}}, false, "OK"},
		{"check failed", Result{Store: "postgres", Status: StatusCheckFailed, Check: CheckResult{ViolationCount: 1}}, true, "FAILED (1)"},
		{"not run", Result{Store: "postgres", Status: StatusFailed, Error: "load: refused"}, true, "NOT RUN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []any{tc.r, &tc.r, ResultsFile{Version: ResultsVersion, Runs: []Result{tc.r}}} {
				data, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				var got struct {
					Failed *bool `json:"failed"`
					Status string
					Runs   []struct {
						Failed *bool `json:"failed"`
					}
				}
				if err := json.Unmarshal(data, &got); err != nil {
					t.Fatal(err)
				}
				f := got.Failed
				if len(got.Runs) == 1 {
					f = got.Runs[0].Failed
				}
				if f == nil || *f != tc.failed {
					t.Errorf("%T: JSON %s: want \"failed\": %v", v, data, tc.failed)
				}
				var back Result
				if len(got.Runs) == 0 {
					if err := json.Unmarshal(data, &back); err != nil || back.Status != tc.r.Status || back.Errors != tc.r.Errors {
						t.Errorf("%T: read back %+v, %v", v, back, err)
					}
				}
			}
			var out bytes.Buffer
			if err := WriteTable(&out, []Result{tc.r}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.word) {
				t.Errorf("table:\n%s\nwant %q", out.String(), tc.word)
			}
		})
	}
}
