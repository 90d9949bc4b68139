package relay

import (
	"errors"
	"strings"
	"testing"

	"allot/changes"
)

// A batch must follow the checkpoint seq by seq: the checkpoint becomes
// its last seq, so a batch that starts past pos+1 or skips a seq would
// skip events for good. The error names the expected and received seq.
func TestRelayAudit11Contiguous(t *testing.T) {
	batch := func(seqs ...uint64) []changes.Event {
		evs := make([]changes.Event, len(seqs))
		for i, s := range seqs {
			evs[i].Seq = s
		}
		return evs
	}
	for _, tc := range []struct {
		name string
		pos  uint64
		evs  []changes.Event
		want string // "" when the batch is contiguous
	}{
		{"from the start", 0, batch(1, 2, 3), ""},
		{"after a checkpoint", 41, batch(42), ""},
		{"empty", 7, nil, ""},
		{"starts late", 41, batch(43, 44), "expected seq 42, received seq 43"},
		{"starts early", 41, batch(41, 42), "expected seq 42, received seq 41"},
		{"a hole", 0, batch(1, 2, 4), "expected seq 3, received seq 4"},
		{"a repeat", 0, batch(1, 1, 2), "expected seq 2, received seq 1"},
		{"out of order", 0, batch(2, 1), "expected seq 1, received seq 2"},
	} {
		err := contiguous(tc.pos, tc.evs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrGap)):
			t.Errorf("%s: %v; want ErrGap naming %q", tc.name, err, tc.want)
		}
	}
}
