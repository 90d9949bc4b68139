package checkout

import (
	"bytes"
	"strings"
	"testing"

	"allot/bench"
)

// A cart is a HOLD and then a CONFIRM or CANCEL: at least two durable
// calls where the bound counts one per op in flight, so "% of bound" for
// carts/s was off by that factor. The bound line gives no share for it
// and says why.
func TestAudit12CheckoutBoundHasNoShare(t *testing.T) {
	r := bench.Result{Store: "allot", Workload: bench.WorkloadInfo{Name: "checkout/hot"}, Durability: "fsync", Workers: 16, Pipeline: 1,
		Status: bench.StatusOK, OpsPerSec: 8000, Extra: map[string]any{"carts_per_sec": 8000.0},
		Bound: &bench.Bound{FsyncP50MS: 1, FsyncSamples: 300, InProcess: true, Workers: 16, InFlight: 16, OpsPerSecFsync: 16000, OpsPerSecFsyncRTT: 16000}}
	var out bytes.Buffer
	bench.WriteBounds(&out, []bench.Result{r})
	s := out.String()
	if strings.Contains(s, "%") {
		t.Errorf("bound line %q gives carts/s a share of a bound of one call per op", s)
	}
	if !strings.Contains(s, "no share") || !strings.Contains(s, "HOLD") {
		t.Errorf("bound line %q does not say why there is no share", s)
	}
}
