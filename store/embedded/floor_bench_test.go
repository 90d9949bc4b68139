package embedded_test

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"allot/inventory"
	"allot/store"
	"allot/workload"
)

// BenchmarkOneWorkerSeed runs the seed workload's ops one after another on
// one goroutine (no lock contention, no hand-off between goroutines), to
// split what write mode costs per op against the memory store:
//
//   - store=memory: the memory store's op (a mutex around the state
//     machine);
//   - store=embedded: the embedded store in write mode (the engine and its
//     journal, a frame per op copied into a mapped segment);
//   - floor=...: the memory store's op followed by the least any journal
//     of write mode must do for it before it returns (the op may be
//     acknowledged only once its bytes are in the page cache): the op
//     encoded (inventory.AppendOp), a CRC-32C over those bytes (recovery
//     must tell a torn record from a whole one after a power cut), and the
//     bytes copied into a shared mapping of a file. No frame header, no
//     engine, no request: a lower bound, not a design. The variants differ
//     in how the file's pages are had, each counted in the loop on the
//     same goroutine: "falloc" allocates 16 MiB segments (fallocate) and
//     faults every page in by writing it, as the journal's spare segment
//     does; "zeros" writes them full of zeros, syncs, and faults them in;
//     "reuse" writes the same 16 MiB mapping again and again, its pages
//     resident and writable after the first lap: no page is ever
//     prepared, which no journal can do (a lap overwrites acknowledged
//     ops), the floor of the floor;
//   - floor=dense: the pages of "falloc" and a record of 12 bytes in all
//     (a CRC, an op counter, the kind and the quantity): fewer bytes than
//     any op's identity takes (a group is three strings): a record
//     format could hardly be smaller, and no journal of this kind cheaper.
//
// Read it as: write mode at 90% of the memory store (issue 14) leaves an
// op memory_ns/0.9 - memory_ns for everything the journal and the engine
// add; the floor variants say what part of that the least journal takes.
func BenchmarkOneWorkerSeed(b *testing.B) {
	for _, name := range []string{"memory", "embedded"} {
		b.Run("store="+name, func(b *testing.B) {
			ctx := context.Background()
			w := seedWorkload(b)
			st, se := openLoaded(b, name, w)
			defer st.Close()
			runOneWorker(b, w, func(op *workload.Op, lines []inventory.Line) (inventory.Result, error) {
				if op.Kind == inventory.KindCapture {
					return se.Capture(ctx, op.Key.Group(), op.N, lines)
				}
				return se.Release(ctx, op.Key, op.N)
			})
		})
	}
	for _, variant := range []string{"falloc", "zeros", "reuse", "dense"} {
		b.Run("floor="+variant, func(b *testing.B) {
			ctx := context.Background()
			w := seedWorkload(b)
			st, se := openLoaded(b, "memory", w)
			defer st.Close()
			pages := variant
			if variant == "dense" {
				pages = "falloc"
			}
			seg := newFloorSegment(b, pages)
			defer seg.close()
			buf := make([]byte, 4, 64) // the CRC, then the op
			var count uint32
			// One op reused: AppendOp's encoder is called through its
			// descriptor, so an op declared per call would escape to the
			// heap, an allocation per op no journal makes.
			o := new(inventory.Op)
			runOneWorker(b, w, func(op *workload.Op, lines []inventory.Line) (inventory.Result, error) {
				var res inventory.Result
				var err error
				if op.Kind == inventory.KindCapture {
					res, err = se.Capture(ctx, op.Key.Group(), op.N, lines)
				} else {
					res, err = se.Release(ctx, op.Key, op.N)
				}
				switch {
				case variant == "dense":
					count++
					buf = binary.LittleEndian.AppendUint32(buf[:4], count)
					buf = binary.LittleEndian.AppendUint32(buf, uint32(op.N)|uint32(op.Kind)<<24)
				case op.Kind == inventory.KindCapture:
					*o = inventory.Capture(op.Key.Group(), op.N)
					buf = inventory.AppendOp(buf[:4], o)
				default:
					*o = inventory.Release(op.Key, op.N)
					buf = inventory.AppendOp(buf[:4], o)
				}
				crc := crc32.Checksum(buf[4:], castagnoli)
				buf[0], buf[1], buf[2], buf[3] = byte(crc), byte(crc>>8), byte(crc>>16), byte(crc>>24)
				seg.append(b, buf)
				return res, err
			})
		})
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// openLoaded opens the store name in write mode with w's rows, and one
// session.
func openLoaded(b *testing.B, name string, w *workload.Workload) (store.Store, store.Session) {
	st := openSeeded(b, name, store.DurabilityWrite, w)
	se, err := st.Session(context.Background())
	if err != nil {
		st.Close()
		b.Fatal(err)
	}
	return st, se
}

// runOneWorker runs b.N ops of w, cycling, through do on this goroutine,
// and reports the process's CPU time per op beside the wall time.
func runOneWorker(b *testing.B, w *workload.Workload, do func(*workload.Op, []inventory.Line) (inventory.Result, error)) {
	var lines []inventory.Line
	var short int64
	cpu0 := processCPU(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		op := &w.Ops[i%len(w.Ops)]
		res, err := do(op, lines)
		if err != nil {
			b.Fatal(err)
		}
		if cap(res.Lines) > cap(lines) {
			lines = res.Lines[:0]
		}
		switch res.Code {
		case inventory.CodeOK:
		case inventory.CodeInsufficient:
			short++
		default:
			b.Fatalf("op %d: %s %s", i, res.Code, res.Detail)
		}
	}
	b.StopTimer()
	cpu := processCPU(b) - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(short)/float64(b.N), "insufficient/op")
}

// floorSegment is a mapped file the floor benchmark copies records into:
// a new one of floorSegmentBytes when the current one is full, its pages
// had as the variant says (BenchmarkOneWorkerSeed), or the same one again
// ("reuse").
type floorSegment struct {
	dir    string
	pages  string
	n      int
	f      *os.File
	mapped []byte
	off    int
}

const floorSegmentBytes = 16 << 20

func newFloorSegment(b *testing.B, pages string) *floorSegment {
	s := &floorSegment{dir: b.TempDir(), pages: pages}
	s.next(b)
	return s
}

func (s *floorSegment) append(b *testing.B, rec []byte) {
	if s.off+len(rec) > len(s.mapped) {
		if s.pages == "reuse" {
			s.off = 0
		} else {
			s.next(b)
		}
	}
	s.off += copy(s.mapped[s.off:], rec)
}

// next retires the current segment (unmapped, closed, removed) and
// prepares the next.
func (s *floorSegment) next(b *testing.B) {
	s.close()
	s.n++
	name := filepath.Join(s.dir, "seg")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	switch s.pages {
	case "falloc", "reuse":
		err = unix.Fallocate(int(f.Fd()), 0, 0, floorSegmentBytes)
	case "zeros":
		zeros := make([]byte, 1<<20)
		for off := 0; off < floorSegmentBytes && err == nil; off += len(zeros) {
			_, err = f.WriteAt(zeros, int64(off))
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		b.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, floorSegmentBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	page := os.Getpagesize()
	for off := 0; off < len(m); off += page {
		m[off] = 0
	}
	s.f, s.mapped, s.off = f, m, 0
}

func (s *floorSegment) close() {
	if s.f == nil {
		return
	}
	unix.Munmap(s.mapped)
	s.f.Close()
	os.Remove(s.f.Name())
	s.f, s.mapped = nil, nil
}

// BenchmarkParallelSeedFloor is BenchmarkOneWorkerSeed's floors in the
// shape of the target itself (BenchmarkParallelSeed: parallelWorkers
// closed-loop sessions on one store): the memory store's sessions, each
// op followed, under one lock shared by every session, by the least a
// write-mode journal does before it returns (the record encoded, its
// CRC-32C, the copy into a mapped segment whose pages are had as
// "falloc" has them). Variants: "lock" takes the shared lock around the
// op and writes nothing (what the lock alone costs beside
// store=memory); "ops" writes the op in the journal's format
// (inventory.AppendOp); "dense" a 12-byte record. Read memory's ns/op over
// a variant's as the bench's embedded / memory ratio that a journal
// doing only that could reach at 16 workers.
func BenchmarkParallelSeedFloor(b *testing.B) {
	b.Run("store=memory", func(b *testing.B) { benchParallelSeed(b, "memory", store.DurabilityWrite) })
	for _, variant := range []string{"lock", "ops", "dense"} {
		b.Run("floor="+variant, func(b *testing.B) {
			w := seedWorkload(b)
			st := openSeeded(b, "memory", store.DurabilityWrite, w)
			defer st.Close()
			j := &floorJournal{variant: variant, seg: newFloorSegment(b, "falloc"), b: b}
			defer j.seg.close()
			sessions := make([]store.Session, parallelWorkers)
			for i := range sessions {
				se, err := st.Session(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				defer se.Close()
				sessions[i] = &floorSession{Session: se, j: j}
			}
			runParallelSeed(b, w, sessions)
		})
	}
}

// floorJournal is the least journal of BenchmarkParallelSeedFloor: one
// lock, one record buffer, one mapped segment.
type floorJournal struct {
	mu      sync.Mutex
	variant string
	seg     *floorSegment
	b       *testing.B
	buf     []byte
	op      inventory.Op
	count   uint32
}

// floorSession runs each op of its memory store session under the
// journal's lock and then records it.
type floorSession struct {
	store.Session
	j *floorJournal
}

func (s *floorSession) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	s.j.mu.Lock()
	defer s.j.mu.Unlock()
	res, err := s.Session.Capture(ctx, g, n, lines)
	if s.j.variant == "ops" {
		s.j.op = inventory.Capture(g, n)
	}
	s.j.record(inventory.KindCapture, n)
	return res, err
}

func (s *floorSession) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	s.j.mu.Lock()
	defer s.j.mu.Unlock()
	res, err := s.Session.Release(ctx, k, n)
	if s.j.variant == "ops" {
		s.j.op = inventory.Release(k, n)
	}
	s.j.record(inventory.KindRelease, n)
	return res, err
}

// record writes the op last set (ops) or a 12-byte record of it (dense)
// to the segment, under the lock; nothing for "lock".
func (j *floorJournal) record(kind inventory.Kind, n int64) {
	switch j.variant {
	case "lock":
		return
	case "dense":
		j.count++
		j.buf = binary.LittleEndian.AppendUint32(j.buf[:0], 0)
		j.buf = binary.LittleEndian.AppendUint32(j.buf, j.count)
		j.buf = binary.LittleEndian.AppendUint32(j.buf, uint32(n)|uint32(kind)<<24)
	default:
		j.buf = inventory.AppendOp(append(j.buf[:0], 0, 0, 0, 0), &j.op)
	}
	crc := crc32.Checksum(j.buf[4:], castagnoli)
	binary.LittleEndian.PutUint32(j.buf, crc)
	j.seg.append(j.b, j.buf)
}
