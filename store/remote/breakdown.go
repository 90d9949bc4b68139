package remote

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"

	"github.com/prometheus/common/expfmt"

	"allot/store"
)

var _ store.StageReporter = (*Store)(nil)

// stageMetric is the server's per-stage histogram (server/stage.go).
const stageMetric = "allot_stage_duration_seconds"

// Stages reads the server's stage histograms from its /metrics: of the
// server this store started, else at the configured HTTPAddr.
func (s *Store) Stages(ctx context.Context) ([]store.StageHistogram, error) {
	addr := s.cfg.HTTPAddr
	if s.child != nil {
		addr = s.child.httpAddr
	}
	if addr == "" {
		return nil, fmt.Errorf("store/remote: the stage times are on the server's HTTP /metrics, and the HTTP address of %s is not known (give it with --http-addr)", s.addr)
	}
	url := "http://" + addr + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("store/remote: %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("store/remote: %s: %s", url, resp.Status)
	}
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("store/remote: %s: %w", url, err)
	}
	fam := families[stageMetric]
	if fam == nil {
		return nil, fmt.Errorf("store/remote: %s has no %s", url, stageMetric)
	}
	var out []store.StageHistogram
	for _, m := range fam.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		sh := store.StageHistogram{Count: h.GetSampleCount(), Sum: h.GetSampleSum()}
		for _, l := range m.GetLabel() {
			if l.GetName() == "stage" {
				sh.Stage = l.GetValue()
			}
		}
		for _, b := range h.GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue
			}
			sh.Bounds = append(sh.Bounds, b.GetUpperBound())
			sh.Counts = append(sh.Counts, b.GetCumulativeCount())
		}
		out = append(out, sh)
	}
	// Prometheus orders series by label value; the server's order is the
	// op's way through it.
	slices.SortStableFunc(out, func(a, b store.StageHistogram) int { return stageRank(a.Stage) - stageRank(b.Stage) })
	return out, nil
}

// stageOrder is the server's stage order (server/stage.go).
var stageOrder = []string{"read", "parse", "queue", "batch", "write", "sync", "wake", "reply"}

func stageRank(name string) int {
	if i := slices.Index(stageOrder, name); i >= 0 {
		return i
	}
	return len(stageOrder)
}
