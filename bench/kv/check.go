package kv

import (
	"fmt"

	"allot/bench"
	"allot/store"
)

const violationsListMax = 20

// check verifies the keys read back. Writes: a written key holds a value
// written to it (value mod keys = the key's number, value < ops issued)
// and not overwritten by a later acknowledged write (checkOverwrites),
// and every key an acknowledged batch wrote exists. Reads: every read
// returned the loaded value and the loaded keys are unchanged.
func (r *run) check(final []store.RWRecord) bench.CheckResult {
	c := bench.CheckResult{Violations: []string{}}
	add := func(format string, args ...any) {
		c.ViolationCount++
		if len(c.Violations) < violationsListMax {
			c.Violations = append(c.Violations, fmt.Sprintf(format, args...))
		}
	}
	got := make(map[string]int64, len(final))
	for _, f := range final {
		got[f.Key] = f.Value
	}
	keys := int64(r.k.Keys)
	if r.k.RequestType == "READ" {
		if n := r.readsWrong.Load(); n > 0 {
			add("%d reads did not return the loaded value", n)
		}
		for i := range r.k.Keys {
			if v, ok := got[Key(i)]; !ok || v != int64(i) {
				add("key %s: %d (found %v), want %d", Key(i), v, ok, i)
			}
		}
		return finish(c)
	}
	issued := min(r.issued.Load(), int64(r.cfg.Ops))
	failed := map[int64]bool{}
	for _, f := range r.failedFrom {
		failed[f/int64(r.depth)] = true
	}
	// The keys an acknowledged batch wrote must exist: key i is written by
	// ops i, i+keys, i+2*keys..., and one whose every write failed may be
	// absent.
	written := min(issued, keys)
	for i := int64(0); i < written; i++ {
		acked := false
		for j := i; j < issued && !acked; j += keys {
			acked = !failed[j/int64(r.depth)]
		}
		k := Key(int(i))
		v, ok := got[k]
		switch {
		case !ok:
			if acked {
				add("acknowledged write of key %s is missing", k)
			}
		case v%keys != i || v >= issued:
			add("key %s holds %d, which no write put there", k, v)
		}
	}
	if int64(len(got)) > written {
		add("%d keys read back, at most %d written", len(got), written)
	}
	if issued > keys {
		r.checkOverwrites(got, issued, add)
	}
	return finish(c)
}

// checkOverwrites holds a key written more than once to its later writes.
// Which of two concurrent writes to a key lands last is the store's
// choice, but a write acknowledged before another acknowledged write to
// the same key was even sent is overwritten by it: a key still holding
// the earlier value lost an acknowledged write. A value that is merely
// old (v%keys is right, v < issued) hides exactly that, as a store that
// keeps the first value of every key would.
func (r *run) checkOverwrites(got map[string]int64, issued int64, add func(string, ...any)) {
	depth, keys := int64(r.depth), int64(r.k.Keys)
	batches := (issued + depth - 1) / depth
	sent := make([]int64, batches)
	acked := make([]int64, batches)
	for b := range acked {
		acked[b] = -1 // untimed: never blamed, never blames
	}
	for _, list := range r.spans {
		for _, s := range list {
			b := s.from / depth
			sent[b], acked[b] = s.sentNS, s.ackedNS
		}
	}
	// latestSent[k]: when the last acknowledged write to key k was sent.
	latestSent := make([]int64, keys)
	latestOp := make([]int64, keys)
	for k := range latestSent {
		latestSent[k] = -1
	}
	for b := range batches {
		if acked[b] < 0 {
			continue
		}
		for j := b * depth; j < min((b+1)*depth, issued); j++ {
			if k := j % keys; sent[b] > latestSent[k] {
				latestSent[k], latestOp[k] = sent[b], j
			}
		}
	}
	for i := range keys {
		v, ok := got[Key(int(i))]
		if !ok || v%keys != i || v < 0 || v >= issued || latestSent[i] < 0 {
			continue // reported above, or nothing acknowledged to compare
		}
		if a := acked[v/depth]; a >= 0 && a < latestSent[i] {
			add("key %s holds %d, whose write was acknowledged %.3f ms before op %d's write to it was sent: an acknowledged write was lost (overwritten by an older one, or dropped)",
				Key(int(i)), v, float64(latestSent[i]-a)/1e6, latestOp[i])
		}
	}
}

func finish(c bench.CheckResult) bench.CheckResult {
	c.OK = c.ViolationCount == 0
	return c
}
