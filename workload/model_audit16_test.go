package workload

import (
	"strings"
	"testing"
)

// A release that would carry a row past inventory.CountMax is refused by
// the model, as by the state machine; Verify then blamed an "unknown row"
// for a row the file stocks on its second line, sending whoever fixes the
// op file after a typo that is not there.
func TestAudit16VerifyNamesAReleasePastCountMax(t *testing.T) {
	in := "allot-ops\tv1\tname=t\trows=1\tskus=1\twarehouses=1\tconditions=1\tsources=1\tops=1\tseed=7\n" +
		"stock\tsku-000001\tw1\tnew\tsupplier\t4611686018427387903\t400\n" +
		"release\tsku-000001\tw1\tnew\tsupplier\t1\n"
	w, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Verify(w)
	if err == nil {
		t.Fatal("Verify accepted a release past the largest count")
	}
	if strings.Contains(err.Error(), "unknown row") || !strings.Contains(err.Error(), "4611686018427387903") {
		t.Errorf("Verify: %v, want the row's count and the bound named, not an unknown row", err)
	}
}
