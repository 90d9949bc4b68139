package kill

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// What an audit could not clean up after it is said under the table and
// in the JSON, and changes neither the verdict nor the exit status: the
// counts stand, and the next audit starts on a shard of its own.
func TestResultCleanupIsReportedNotJudged(t *testing.T) {
	r := &Result{Store: "allot-cluster", Durability: "fsync", Kills: 2, Acked: 10,
		Cleanup: "shard kill1 not deleted: the audit's JetStream did not answer"}
	if r.Verdict() != "ok" || r.Failed() {
		t.Fatalf("a leftover changed the judgment: verdict %q, failed %v", r.Verdict(), r.Failed())
	}
	var b bytes.Buffer
	if err := WriteTable(&b, []*Result{r}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "allot-cluster fsync: cleanup: "+r.Cleanup+"\n") {
		t.Errorf("the table does not say what was left:\n%s", b.String())
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Cleanup string `json:"cleanup"`
		Verdict string `json:"verdict"`
		Failed  bool   `json:"failed"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Cleanup != r.Cleanup || got.Verdict != "ok" || got.Failed {
		t.Errorf("the JSON result is %s", out)
	}
	// Without a leftover, nothing is said.
	r.Cleanup = ""
	b.Reset()
	WriteTable(&b, []*Result{r})
	out, _ = json.Marshal(r)
	if strings.Contains(b.String(), "cleanup") || strings.Contains(string(out), "cleanup") {
		t.Errorf("a clean audit mentions a cleanup:\n%s\n%s", b.String(), out)
	}
}
