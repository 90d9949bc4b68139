package bench

import (
	"strings"
	"testing"

	"allot/inventory"
	"allot/workload"
)

// A release the store refuses as insufficient (no sound store does: a
// release only adds) is reported as what it was. Its error sample read
// "capture of 1 from <group>: still insufficient ... after 0 retries",
// naming a capture that was never sent and hiding the row.
func TestAudit16ClassifyNamesARefusedReleaseAsARelease(t *testing.T) {
	release := workload.Op{Kind: inventory.KindRelease, Key: inventory.RowKey{SKU: "a", Warehouse: "w1", Condition: "new", Source: "s1"}, N: 1}
	v, status, msg := classify(7, &release, &inventory.Result{Code: inventory.CodeInsufficient, Available: 0}, nil, 0, 5)
	if v != verdictFailed || status != OpRefused {
		t.Fatalf("classify = %d, %d", v, status)
	}
	if !strings.Contains(msg, "release of 1 to") || strings.Contains(msg, "capture") {
		t.Fatalf("message %q does not name the release", msg)
	}
}
