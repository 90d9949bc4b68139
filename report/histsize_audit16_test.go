package report

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"allot/bench"
)

// wideHistogram is a 72-byte encoded histogram whose header asks for 5
// significant digits from 1 to 2^62: hdrhistogram-go allocates 48 MB of
// counts to decode it.
func wideHistogram(t testing.TB) string {
	h := hdrhistogram.New(1, 1<<62, 5)
	if err := h.RecordValue(5); err != nil {
		t.Fatal(err)
	}
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return string(enc)
}

// A results file is input: a histogram header may ask for any range and
// precision, and the decoder allocates the counts the header implies
// whatever few bytes follow. 72 bytes made it allocate 48 MB, and every
// run's histogram stayed decoded until the chart was built: 20 such runs
// (1.5 KB of file) took a gigabyte, a few hundred would take the machine.
// The bench's histograms hold about 41,000 counts (1 ns to a week, 3
// digits); a header asking for far more is refused, and said so.
func TestAudit16HistogramHeaderThatAllocatesGigabytesIsRefused(t *testing.T) {
	r := bench.Result{Store: "x", Status: bench.StatusOK, Check: bench.CheckResult{OK: true},
		Histogram: wideHistogram(t), HistogramUnit: "ns"}
	page := render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{r}})
	if !strings.Contains(page, "latency histogram not drawn") {
		t.Error("a histogram header asking for 48 MB of counts is decoded")
	}
	// The widest the bench writes is drawn.
	bench3 := hdrhistogram.New(1, int64(7*24*3600e9), 3)
	if n := len(bench3.Export().Counts); n > histogramCountsMax {
		t.Fatalf("the bench's histogram has %d counts, over the bound %d", n, histogramCountsMax)
	}
	// countsLen agrees with the library.
	for _, c := range []struct {
		lo, hi int64
		d      int
	}{{1, 2, 1}, {1, int64(7 * 24 * 3600e9), 3}, {1, 3600e9, 3}, {1000, 1 << 40, 2}, {1, 1 << 62, 5}, {1 << 32, 1 << 62, 4}, {3, 1 << 62, 1}} {
		want := len(hdrhistogram.New(c.lo, c.hi, c.d).Export().Counts)
		if got := countsLen(c.lo, c.hi, int32(c.d)); got != int64(want) {
			t.Errorf("countsLen(%d, %d, %d) = %d, the library allocates %d", c.lo, c.hi, c.d, got, want)
		}
	}
}

// The spectrum keeps no run's histogram decoded while it decodes the
// next: a file of many runs needs the memory of one. Measured in a
// process of its own, 64 runs of histograms at the bound (8 MB of counts
// each, 512 MB together) must render in well under that.
func TestAudit16SpectrumDecodesOneHistogramAtATime(t *testing.T) {
	if os.Getenv("ALLOT_AUDIT16_CHILD") == "1" {
		lo, hi, d := histogramAtBound()
		h := hdrhistogram.New(lo, hi, d)
		if n := len(h.Export().Counts); n > histogramCountsMax || n < histogramCountsMax/2 {
			t.Fatalf("histogram of %d counts, want near the bound %d", n, histogramCountsMax)
		}
		for v := int64(1); v < 1000; v++ {
			_ = h.RecordValue(v * 997)
		}
		enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			t.Fatal(err)
		}
		var runs []bench.Result
		for range 64 {
			runs = append(runs, bench.Result{Store: "x", Status: bench.StatusOK, Check: bench.CheckResult{OK: true},
				Histogram: string(enc), HistogramUnit: "ns"})
		}
		page := render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: runs})
		if strings.Contains(page, "latency histogram not drawn") {
			t.Fatal("a histogram at the bound was refused")
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.Sys > 300<<20 {
			t.Fatalf("rendering took %d MB from the system: the histograms were all kept", ms.Sys>>20)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAudit16SpectrumDecodesOneHistogramAtATime$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ALLOT_AUDIT16_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// histogramAtBound is a histogram layout of histogramCountsMax counts:
// 5 digits (131,072 half-bucket counts) over 8 buckets, 1 to 2^24.
func histogramAtBound() (lo, hi int64, digits int) { return 1, 1 << 24, 5 }
