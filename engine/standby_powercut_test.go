package engine

import (
	"errors"
	"strings"
	"testing"

	"allot/journal"
	"allot/vfs"
)

// A standby writes the frames it applies without syncing them (the log
// holds them). After a power cut its last segment may have lost any of its
// unsynced pages, its header's included: the node must start again, cut
// where the damage begins, and take the rest from the log, not refuse its
// journal as corrupt (it did: a synced segment with a hole followed by
// valid frames).
func TestStandbyRestartsAfterAPowerCut(t *testing.T) {
	for _, lost := range []int64{0, 1} { // the page lost: the header's, or one in the middle
		t.Run("page"+string(rune('0'+lost)), func(t *testing.T) {
			p := mustOpen(t, Config{Dir: t.TempDir(), Durability: DurabilityFsync, Replicated: true})
			defer p.Close()
			log := &logReplicator{}
			if err := p.Promote(log); err != nil {
				t.Fatal(err)
			}
			must(p.Stock(rk("a", "w1"), 1000000, 10))
			for range 300 {
				must(p.Release(rk("a", "w1"), 1))
			}
			frames := log.take()

			mem := vfs.NewMem()
			cfg := Config{Dir: "/standby", FS: mem, Durability: DurabilityFsync, Replicated: true}
			s := mustOpen(t, cfg)
			for _, f := range frames {
				if err := s.ApplyFrame(f); err != nil {
					t.Fatal(err)
				}
			}
			last := ""
			for _, n := range mem.Names() {
				if strings.Contains(n, "journal-") && n > last {
					last = n
				}
			}
			cut := mem.CrashPages(func(name string, page int64) int {
				if name == last && page == lost {
					return 0
				}
				return vfs.PageBytes
			})
			s.Close()

			cfg.FS = cut
			s2, err := Open(cfg)
			if err != nil {
				var ce *journal.CorruptionError
				t.Fatalf("a standby after a power cut that lost page %d of %s: %v (corruption: %v)", lost, last, err, errors.As(err, &ce))
			}
			defer s2.Close()
			at := s2.DurableLSN()
			if at >= p.DurableLSN() {
				t.Fatalf("the standby recovered to op %d of %d: the test lost nothing", at, p.DurableLSN())
			}
			// The rest comes from the log again.
			for _, f := range frames {
				if err := s2.ApplyFrame(f); err != nil {
					t.Fatal(err)
				}
			}
			pr, _ := p.Rows()
			sr, _ := s2.Rows()
			if s2.DurableLSN() != p.DurableLSN() || len(pr) != 1 || len(sr) != 1 || pr[0] != sr[0] {
				t.Fatalf("after taking the log again: standby at %d rows %v, primary at %d rows %v", s2.DurableLSN(), sr, p.DurableLSN(), pr)
			}
		})
	}
}
