package dtm

import (
	"strings"
	"testing"
)

func TestAppendLines(t *testing.T) {
	rec := "allot:r\x1fs\x1fw1\x1fc\x1fo\x1e2\x1es\x1fw1\x1fc\x1fo\x1f2\x1d" + "allot:r\x1fs\x1fw2\x1fc\x1fo\x1e1\x1es\x1fw2\x1fc\x1fo\x1f1\x1d"
	got, err := appendLines(nil, rec)
	if err != nil || len(got) != 2 || got[0].Row.Warehouse != "w1" || got[0].Count != 2 || got[1].Row.Warehouse != "w2" || got[1].Count != 1 {
		t.Fatalf("appendLines = %v, %v", got, err)
	}
	for _, bad := range []string{"x\x1d", "a\x1eb\x1d", "k\x1e1\x1es\x1fw\x1fc\x1fo\x1d", "k\x1e1\x1es\x1fw\x1fc\x1fo\x1fx\x1d"} {
		if _, err := appendLines(nil, bad); err == nil {
			t.Errorf("appendLines(%q) accepted it", bad)
		}
	}
}

// FuzzAppendLines: a branch record never panics the parser, and every line
// it accepts has five fields' worth of key.
func FuzzAppendLines(f *testing.F) {
	f.Add("allot:r\x1fs\x1fw1\x1fc\x1fo\x1e2\x1es\x1fw1\x1fc\x1fo\x1f2\x1d")
	f.Add("")
	f.Fuzz(func(t *testing.T, rec string) {
		lines, err := appendLines(nil, rec)
		if err != nil {
			return
		}
		for _, l := range lines {
			if strings.Contains(l.Row.SKU+l.Row.Warehouse+l.Row.Condition+l.Row.Source, "\x1f") {
				t.Fatalf("a field kept a separator: %+v", l)
			}
		}
	})
}
