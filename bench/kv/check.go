package kv

import (
	"fmt"

	"allot/bench"
	"allot/store"
)

const violationsListMax = 20

// check verifies the keys read back. Writes: a written key holds a value
// written to it (value mod keys = the key's number, value < ops issued),
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
	// The keys an acknowledged batch wrote must exist.
	written := min(issued, keys)
	for i := int64(0); i < written; i++ {
		if failed[i/int64(r.depth)] && issued <= keys {
			continue
		}
		k := Key(int(i))
		v, ok := got[k]
		switch {
		case !ok:
			add("acknowledged write of key %s is missing", k)
		case v%keys != i || v >= issued:
			add("key %s holds %d, which no write put there", k, v)
		}
	}
	if int64(len(got)) > written {
		add("%d keys read back, at most %d written", len(got), written)
	}
	return finish(c)
}

func finish(c bench.CheckResult) bench.CheckResult {
	c.OK = c.ViolationCount == 0
	return c
}
