package benchsvc

import (
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestResumeOverMergedSeriesAudit13: a long run's series merges its older
// samples; the event stream still resumes from Last-Event-ID with no
// sample missing and none twice. Every point goes out with its sample
// number; a client holding samples up to a recent one gets exactly the
// ones after it; a client holding up to one that has since been merged
// into an older point (there is no cut there any more) gets "reset",
// then the whole series, once.
func TestResumeOverMergedSeriesAudit13(t *testing.T) {
	s := newLongRunService(t, &endlessJob{})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	rec := longRun(t, s, 4*liveSeriesMax)
	url := srv.URL + "/v1/runs/" + rec.ID + "/events"
	seqs := make([]int, len(rec.Series))
	for i, p := range rec.Series {
		seqs[i] = p.Seq
	}

	events, _ := readEvents(t, url, "")
	if ids := sampleIDs(t, events); !slices.Equal(ids, seqs) {
		t.Fatalf("the replay sends ids %v..., the series' sample numbers are %v...", head(ids), head(seqs))
	}
	if n := len(events); n > liveSeriesMax+1 {
		t.Errorf("the replay of a finished run is %d events", n)
	}

	// A client that holds the samples up to a recent one.
	k := len(seqs) - 10
	events, _ = readEvents(t, url, strconv.Itoa(seqs[k]))
	ids := sampleIDs(t, events)
	want := make([]int, 0, 9)
	for n := seqs[k] + 1; n <= seqs[len(seqs)-1]; n++ {
		want = append(want, n)
	}
	if !slices.Equal(ids, want) || events[0].name != "sample" || events[len(events)-1].name != "end" {
		t.Errorf("resumed after sample %d: ids %v, want %v, then the end", seqs[k], ids, want)
	}

	// A client that holds the samples up to one merged since.
	merged := -1
	for i := 1; i < len(seqs); i++ {
		if seqs[i]-seqs[i-1] > 1 {
			merged = seqs[i] - 1
			break
		}
	}
	if merged < 0 {
		t.Fatalf("no point of the series merges samples: %v...", head(seqs))
	}
	events, _ = readEvents(t, url, strconv.Itoa(merged))
	if len(events) == 0 || events[0].name != "reset" || events[0].id != "" || !strings.Contains(events[0].data, strconv.Itoa(merged)) {
		t.Fatalf("resumed after sample %d, merged since: first event %+v, want reset naming it", merged, first(events))
	}
	if ids := sampleIDs(t, events); !slices.Equal(ids, seqs) {
		t.Errorf("after the reset: ids %v..., want the whole series %v...", head(ids), head(seqs))
	}
}

func head(ids []int) []int { return ids[:min(len(ids), 12)] }

func first(events []sseEvent) any {
	if len(events) == 0 {
		return "none"
	}
	return events[0]
}
