package workload

import (
	"strings"
	"testing"
)

// An op file that parses but whose ops do not all succeed in order is
// refused by Verify (allot bench --ops-file says so before any store
// runs). The error named "op 3" only: a reader fixing the file had to
// work out that op 3 of a file of 2 stocked rows is its line 6.
func TestAudit15VerifyNamesTheLineOfTheBadOp(t *testing.T) {
	bad := strings.Replace(smallFile, "release\tsku-000001\tw2\tnew\tsupplier\t1\n",
		"release\tsku-000001\tw2\tnew\tsupplier\t1\ncapture\tsku-000001\tnew\tsupplier\t3\n", 1)
	bad = strings.Replace(bad, "ops=2", "ops=3", 1)
	w, err := Read(strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Verify(w)
	if err == nil {
		t.Fatal("Verify accepted a capture of 3 from a group holding 2")
	}
	if !strings.Contains(err.Error(), "op 3") || !strings.Contains(err.Error(), "line 6") {
		t.Errorf("Verify: %v, want op 3 and its line 6 named", err)
	}
}
