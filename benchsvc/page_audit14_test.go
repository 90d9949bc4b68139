package benchsvc

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestPageChartBoundedAudit14 runs the page's own script in node (as
// TestPageReconnectsEventStreamAudit13 does) on a run that makes far more
// samples than the service keeps. The page kept every sample it was sent
// in its chart's arrays, however long it watched. Now they hold at most
// as many points as the run's series (seriesRecentMax + seriesOlderMax,
// so that the replay a stream starts with fits whole), the newest.
func TestPageChartBoundedAudit14(t *testing.T) {
	node := nodeOrSkip(t)
	s, srv, _ := newTestService(t, Config{EventInterval: 2 * time.Millisecond})
	// 3,000 ticks, want over 1,200 samples: a loaded machine drops ticks.
	rec, err := s.Submit(json.RawMessage(`{}`), []string{"--duration=6s"})
	if err != nil {
		t.Fatal(err)
	}
	page := runPageHarness(t, node, srv.URL)
	final := waitState(t, s, rec.ID)
	if page.Error != "" {
		t.Fatalf("%s (page status %q)", page.Error, page.Status)
	}
	samples := lastSeq(final.Series)
	if samples <= 2*liveSeriesMax {
		t.Fatalf("the run made %d samples, want more than %d for the page to bound", samples, 2*liveSeriesMax)
	}
	if page.PointsMax > liveSeriesMax {
		t.Errorf("the page gave its charts %d points of a run of %d samples, want at most %d", page.PointsMax, samples, liveSeriesMax)
	}
	if page.Reconnects == 0 && len(page.T) != liveSeriesMax {
		t.Errorf("the page's chart ends with %d points of a run of %d samples, want %d", len(page.T), samples, liveSeriesMax)
	}
	// The newest: the run's recent samples, one by one, end both.
	if len(page.T) < seriesRecentMax {
		t.Fatalf("the page's chart ends with %d points, want at least the %d recent samples", len(page.T), seriesRecentMax)
	}
	want := make([]float64, seriesRecentMax)
	for i, p := range final.Series[len(final.Series)-seriesRecentMax:] {
		want[i] = p.T
	}
	if got := page.T[len(page.T)-seriesRecentMax:]; !slices.Equal(got, want) {
		t.Errorf("the page's chart ends with %v...,\nthe run's series with %v...: not the newest samples", head64(got), head64(want))
	}
	for i := 1; i < len(page.T); i++ {
		if page.T[i] <= page.T[i-1] {
			t.Fatalf("the page's chart has point %d at %v s after point %d at %v s", i, page.T[i], i-1, page.T[i-1])
		}
	}
}

func head64(v []float64) []float64 { return v[:min(len(v), 8)] }
