package benchsvc

import (
	"slices"
	"sort"

	"allot/bench"
)

// Bounds of a run's live series (Record.Series). A run makes a sample a
// second for as long as it runs; unbounded, a day-long run kept 86,400
// of them in memory, in its record on disk and in the replay every event
// stream of it starts with.
const (
	// seriesRecentMax is how many of the newest samples are kept one by
	// one: a client that reconnects within that many samples (five
	// minutes at the default interval) resumes exactly where it was.
	seriesRecentMax = 300
	// seriesOlderMax bounds the merged points before them.
	seriesOlderMax = 300
)

// series is a run's live samples within the bounds above: points holds
// the merged older points first, then the newest samples one by one.
// Every merged point but the last covers stride samples, the last at most
// stride: when the merged points would be more than seriesOlderMax,
// adjacent pairs merge and stride doubles, so that the chart of a long
// run keeps an even resolution over all of it.
//
// A merged point keeps the series' totals exact: its Ops is the sum of
// its samples' ops, its OpsPerSec those ops over its whole interval, and
// its T, Seq and running totals (OpsDone, Errors, OpsTotal, the store
// run) are those of its last sample; its P99MS is the worst of theirs.
// Rejected: dropping the oldest samples (a long run's chart would lose
// its start, and its totals their first part), and merging every sample
// at a fixed stride (the newest samples, those a reconnecting client asks
// for, would be merged too).
type series struct {
	points []Event
	older  int // merged points at the front of points
	stride int // samples per merged point; 0 until a sample is merged
	seq    int // samples added so far: the last one's number
}

// newSeries continues a series kept in a record (read back from disk).
// Records written before samples carried their number have Seq 0: they
// were never merged, so their position says it.
func newSeries(points []Event) series {
	s := series{points: points}
	for i := range s.points {
		if s.points[i].Seq == 0 {
			s.points[i].Seq = i + 1
		}
	}
	if n := len(s.points); n > 0 {
		s.seq = s.points[n-1].Seq
	}
	return s
}

// add appends the next sample, numbering it, and merges what leaves the
// recent samples.
func (s *series) add(ev Event) {
	s.seq++
	ev.Seq = s.seq
	s.points = append(s.points, ev)
	if len(s.points)-s.older <= seriesRecentMax {
		return
	}
	// points[s.older] is no longer one of the recent samples.
	s.stride = max(s.stride, 1)
	if s.older > 0 && s.samples(s.older-1) < s.stride {
		s.points[s.older-1] = merge(s.prevT(s.older-1), s.points[s.older-1], s.points[s.older])
		s.points = slices.Delete(s.points, s.older, s.older+1)
	} else {
		s.older++
	}
	if s.older <= seriesOlderMax {
		return
	}
	s.stride *= 2
	w := 0
	for i := 0; i < s.older; i += 2 {
		p := s.points[i]
		if i+1 < s.older {
			// points[w-1], already written, ends where points[i-1] did.
			p = merge(s.prevT(w), p, s.points[i+1])
		}
		s.points[w] = p
		w++
	}
	s.points = append(s.points[:w], s.points[s.older:]...)
	s.older = w
}

// samples is how many samples points[i] covers.
func (s *series) samples(i int) int {
	if i == 0 {
		return s.points[0].Seq
	}
	return s.points[i].Seq - s.points[i-1].Seq
}

// prevT is when the interval of points[i] began: the previous point's
// time, or the run's start.
func (s *series) prevT(i int) float64 {
	if i == 0 {
		return 0
	}
	return s.points[i-1].T
}

// merge is the point covering a and b, adjacent, a first; a's interval
// began at prevT.
func merge(prevT float64, a, b Event) Event {
	m := b
	m.Ops = a.Ops + b.Ops
	m.OpsPerSec = 0
	if dt := b.T - prevT; dt > 0 {
		m.OpsPerSec = float64(m.Ops) / dt
	}
	m.P99MS = max(a.P99MS, b.P99MS)
	return m
}

// resumable reports whether a client holding every sample up to number
// after can be sent just the points after it: after is 0, or the end of a
// point, or past the last one. Otherwise after fell inside a point merged
// since, and the client needs the series again.
func resumable(points []Event, after int) bool {
	if after == 0 || len(points) == 0 || after >= points[len(points)-1].Seq {
		return true
	}
	i := sort.Search(len(points), func(i int) bool { return points[i].Seq >= after })
	return points[i].Seq == after
}

// lastSeq is the number of the last sample points cover, 0 for none.
func lastSeq(points []Event) int {
	if len(points) == 0 {
		return 0
	}
	return points[len(points)-1].Seq
}

// throughputSecondsMax bounds a result's per-second counts as the service
// keeps them: bench.ThroughputSecondsMax, the bound every result's counts
// keep at their source; later seconds fold into the last, so that the
// counts still sum to the run's ops. A result of another build could
// hold more, and each finished result stays in the history.
const throughputSecondsMax = bench.ThroughputSecondsMax

// boundThroughput returns counts within throughputSecondsMax, a copy when
// it folds (the job's result is not changed under it).
func boundThroughput(counts []int64) []int64 {
	if len(counts) <= throughputSecondsMax {
		return counts
	}
	out := slices.Clone(counts[:throughputSecondsMax])
	for _, n := range counts[throughputSecondsMax:] {
		out[throughputSecondsMax-1] += n
	}
	return out
}
