package engine

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"allot/inventory"
	"allot/vfs"
)

// logReplicator is an in-memory replicated log: it keeps every frame a
// primary hands it (copied: the engine reuses the buffer), and refuses
// frames once deposed is set, as a log that another primary took does.
type logReplicator struct {
	mu      sync.Mutex
	frames  [][]byte
	deposed bool
}

func (l *logReplicator) Replicate(frame []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.deposed {
		return fmt.Errorf("test log: %w", &NotPrimaryError{Primary: "127.0.0.1:1"})
	}
	l.frames = append(l.frames, slices.Clone(frame))
	return nil
}

func (l *logReplicator) take() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.frames
	l.frames = nil
	return f
}

// A primary's frames, applied to a standby in every mode, rebuild the same
// rows and holds; a standby refuses mutations with the primary's address
// and serves reads; a deposed primary acknowledges nothing and its journal
// never holds the refused frame.
func TestReplicatedPrimaryAndStandby(t *testing.T) {
	for _, mode := range []Durability{DurabilityFsync, DurabilityWrite, DurabilityNone} {
		t.Run(string(mode), func(t *testing.T) {
			pdir, sdir := t.TempDir(), t.TempDir()
			p := mustOpen(t, Config{Dir: pdir, Durability: mode, Replicated: true})
			s := mustOpen(t, Config{Dir: sdir, Durability: mode, Replicated: true})
			defer s.Close()
			if _, err := p.Stock(rk("a", "w1"), 5, 10); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("a mutation on a standby: %v, want not primary", err)
			}
			log := &logReplicator{}
			if err := p.Promote(log); err != nil {
				t.Fatal(err)
			}
			must(p.Stock(rk("a", "w1"), 5, 10))
			must(p.Stock(rk("a", "w2"), 5, 10))
			must(p.Capture(gk("a"), 3, nil))
			if res := must(p.Hold("h1", time.Hour, []inventory.Demand{{Group: gk("a"), N: 2}})); res.Code != inventory.CodeOK {
				t.Fatalf("hold: %+v", res)
			}
			must(p.Hold("h2", time.Millisecond, []inventory.Demand{{Group: gk("a"), N: 1}}))
			time.Sleep(20 * time.Millisecond)
			must(p.Release(rk("a", "w2"), 1)) // in a batch after h2's deadline: h2 expires first
			frames := log.take()
			if len(frames) == 0 {
				t.Fatal("the primary replicated no frame")
			}
			s.SetPrimary("127.0.0.1:7379", "127.0.0.1:7380")
			for _, f := range frames {
				if err := s.ApplyFrame(f); err != nil {
					t.Fatal(err)
				}
				if err := s.ApplyFrame(f); err != nil { // a repeat is skipped
					t.Fatalf("repeat: %v", err)
				}
			}
			pr, _ := p.Rows()
			sr, err := s.Rows()
			if err != nil || !slices.Equal(pr, sr) {
				t.Fatalf("standby rows %v (%v), primary %v", sr, err, pr)
			}
			if res := must(s.HoldGet("h2")); res.State != inventory.HoldExpired {
				t.Fatalf("standby h2: %+v", res)
			}
			_, err = s.Release(rk("a", "w1"), 1)
			var np *NotPrimaryError
			if !errors.As(err, &np) || np.Primary != "127.0.0.1:7379" || np.Error() != "not primary, primary at 127.0.0.1:7379" {
				t.Fatalf("a mutation on a standby: %v", err)
			}
			if s.DurableLSN() != p.DurableLSN() {
				t.Fatalf("standby at lsn %d, primary %d", s.DurableLSN(), p.DurableLSN())
			}

			// A gap is refused and changes nothing.
			must(p.Release(rk("a", "w1"), 1))
			must(p.Release(rk("a", "w1"), 1))
			more := log.take()
			if len(more) != 2 {
				t.Fatalf("%d frames for two sequential releases", len(more))
			}
			if err := s.ApplyFrame(more[1]); err == nil {
				t.Fatal("a frame after a gap was applied")
			}
			bad := slices.Clone(more[0])
			bad[len(bad)-1] ^= 1
			if err := s.ApplyFrame(bad); err == nil {
				t.Fatal("a corrupt frame was applied")
			}
			for _, f := range more {
				if err := s.ApplyFrame(f); err != nil {
					t.Fatal(err)
				}
			}

			// Deposed: the next mutation is refused, and so is every later one.
			log.mu.Lock()
			log.deposed = true
			log.mu.Unlock()
			before := p.DurableLSN()
			if _, err := p.Release(rk("a", "w1"), 1); !errors.As(err, &np) {
				t.Fatalf("a deposed primary's release: %v, want not primary", err)
			}
			if _, err := p.Release(rk("a", "w1"), 1); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("after deposition: %v", err)
			}
			p.Close()
			p = mustOpen(t, Config{Dir: pdir, Durability: mode, Replicated: true})
			defer p.Close()
			if got := p.DurableLSN(); got != before {
				t.Fatalf("the deposed primary's journal ends at %d, want %d (the refused frame is not in it)", got, before)
			}
			pr, _ = p.Rows()
			sr, _ = s.Rows()
			if !slices.Equal(pr, sr) {
				t.Fatalf("reopened deposed primary %v, standby %v", pr, sr)
			}
		})
	}
}

// slowLog is a replicated log whose every append takes a while, as an R3
// append over the network does.
type slowLog struct {
	logReplicator
	delay time.Duration
}

func (l *slowLog) Replicate(frame []byte) error {
	time.Sleep(l.delay)
	return l.logReplicator.Replicate(frame)
}

// A replicated primary's group commit waits for the clients it just
// answered as long as a whole flush (the log's append included), not only
// the local fdatasync: clients that each wait for their reply before the
// next op stay one group, one frame a round, instead of splitting into
// groups that take turns at the slow log.
func TestReplicatedPrimaryKeepsClientsInOneFrame(t *testing.T) {
	p := mustOpen(t, Config{Dir: "/d", FS: vfs.NewMem(), Durability: DurabilityFsync, Replicated: true})
	defer p.Close()
	log := &slowLog{delay: 3 * time.Millisecond}
	if err := p.Promote(log); err != nil {
		t.Fatal(err)
	}
	const clients, rounds = 8, 40
	for c := range clients {
		must(p.Stock(rk("a", fmt.Sprint("w", c)), 0, 1))
	}
	log.take()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if _, err := p.Release(rk("a", fmt.Sprint("w", c)), 1); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	frames := len(log.take())
	perFrame := float64(clients*rounds) / float64(frames)
	t.Logf("%d ops in %d frames: %.1f a frame", clients*rounds, frames, perFrame)
	if perFrame < 6 {
		t.Fatalf("%.1f ops a frame from %d clients in step: the group commit did not wait for them", perFrame, clients)
	}
}
