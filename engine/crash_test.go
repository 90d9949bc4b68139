package engine

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"allot/inventory"
)

// The crash test runs the engine in a child process (this test binary,
// re-executed) under load from several goroutines, SIGKILLs it at a random
// moment, reopens the data directory and checks that every acknowledged op
// is reflected. The child prints "S w seq op" before it submits an op and
// "A w seq code lines" after the op is acknowledged, unbuffered, so the
// parent knows every op that could have reached the journal.

const crashChildEnv = "ALLOT_ENGINE_CRASH_CHILD"

var crashGroups = []string{"g1", "g2", "g3"}
var crashWarehouses = []string{"w1", "w2", "w3"}

func crashRow(g, w string) inventory.RowKey {
	return inventory.RowKey{SKU: g, Warehouse: w, Condition: "new", Source: "s"}
}

func TestMain(m *testing.M) {
	if v := os.Getenv(crashChildEnv); v != "" {
		crashChild(v)
		return
	}
	os.Exit(m.Run())
}

func crashChild(arg string) {
	dir, mode, _ := strings.Cut(arg, ",")
	e, err := Open(Config{Dir: dir, Durability: Durability(mode), SnapshotEveryOps: 5000})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	var out sync.Mutex
	emit := func(line string) {
		out.Lock()
		os.Stdout.WriteString(line)
		out.Unlock()
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(os.Getpid())))
			var lines []inventory.Line
			for seq := 0; ; seq++ {
				g := crashGroups[rng.IntN(len(crashGroups))]
				n := 1 + rng.Int64N(3)
				var op inventory.Op
				var desc string
				if rng.IntN(2) == 0 {
					op = inventory.Capture(crashRow(g, "").Group(), n)
					desc = fmt.Sprintf("C %s %d", g, n)
				} else {
					wh := crashWarehouses[rng.IntN(len(crashWarehouses))]
					op = inventory.Release(crashRow(g, wh), n)
					desc = fmt.Sprintf("R %s %s %d", g, wh, n)
				}
				emit(fmt.Sprintf("S %d %d %s\n", w, seq, desc))
				res, err := e.Do(op, lines)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(4)
				}
				lines = res.Lines
				var b strings.Builder
				fmt.Fprintf(&b, "A %d %d %d", w, seq, res.Code)
				for _, l := range res.Lines {
					fmt.Fprintf(&b, " %s:%d", l.Warehouse, l.Count)
				}
				b.WriteByte('\n')
				emit(b.String())
			}
		}()
	}
	wg.Wait()
}

type crashOp struct {
	capture bool
	group   string
	wh      string
	n       int64
	acked   bool
	code    inventory.Code
	lines   map[string]int64
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for _, mode := range []Durability{DurabilityFsync, DurabilityWrite} {
		dir := t.TempDir()
		// Initial stock.
		e := mustOpen(t, Config{Dir: dir, Durability: mode})
		initial := map[inventory.RowKey]int64{}
		for _, g := range crashGroups {
			for _, w := range crashWarehouses {
				c := rng.Int64N(20)
				must(e.Stock(crashRow(g, w), c, 100))
				initial[crashRow(g, w)] = c
			}
		}
		e.Close()
		for round := 1; round <= 5; round++ {
			expected := crashRound(t, exe, dir, mode, rng, initial)
			initial = expected
		}
	}
}

// crashRound runs one child until SIGKILL and checks the recovered state
// against expected (the state before the round). It returns the recovered
// state, the starting point of the next round.
func crashRound(t *testing.T, exe, dir string, mode Durability, rng *rand.Rand, before map[inventory.RowKey]int64) map[inventory.RowKey]int64 {
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir+","+string(mode))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ops := map[[2]int]*crashOp{}
	acks := 0
	scan := bufio.NewScanner(stdout)
	killAfter := 200 + rng.IntN(3000) // acknowledged ops before the kill
	killed := false
	for scan.Scan() {
		f := strings.Fields(scan.Text())
		w, _ := strconv.Atoi(f[1])
		seq, _ := strconv.Atoi(f[2])
		id := [2]int{w, seq}
		switch f[0] {
		case "S":
			op := &crashOp{capture: f[3] == "C", group: f[4]}
			if op.capture {
				op.n, _ = strconv.ParseInt(f[5], 10, 64)
			} else {
				op.wh = f[5]
				op.n, _ = strconv.ParseInt(f[6], 10, 64)
			}
			ops[id] = op
		case "A":
			op := ops[id]
			code, _ := strconv.Atoi(f[3])
			op.acked, op.code, op.lines = true, inventory.Code(code), map[string]int64{}
			for _, l := range f[4:] {
				wh, c, _ := strings.Cut(l, ":")
				op.lines[wh], _ = strconv.ParseInt(c, 10, 64)
			}
			acks++
			if acks == killAfter && !killed {
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatalf("child exited before the kill: %s", stderr.String())
	}
	e, err := Open(Config{Dir: dir, Durability: mode})
	if err != nil {
		t.Fatalf("%s: recover after SIGKILL: %v", mode, err)
	}
	defer e.Close()
	rows, _ := e.Rows()
	after := map[inventory.RowKey]int64{}
	for _, r := range rows {
		if r.Count < 0 {
			t.Fatalf("row %v below zero", r.Key)
		}
		after[r.Key] = r.Count
	}

	// Expected per row from acknowledged ops; in-flight ops (started, not
	// acknowledged) may or may not have applied.
	want := map[inventory.RowKey]int64{}
	for k, v := range before {
		want[k] = v
	}
	inflight := map[string][]*crashOp{}
	for _, op := range ops {
		if !op.acked {
			inflight[op.group] = append(inflight[op.group], op)
			continue
		}
		if op.code != inventory.CodeOK {
			continue
		}
		if op.capture {
			var sum int64
			for wh, c := range op.lines {
				want[crashRow(op.group, wh)] -= c
				sum += c
			}
			if sum != op.n {
				t.Fatalf("capture of %d got lines summing to %d", op.n, sum)
			}
		} else {
			want[crashRow(op.group, op.wh)] += op.n
		}
	}
	for _, g := range crashGroups {
		var wantTotal, gotTotal int64
		for _, wh := range crashWarehouses {
			wantTotal += want[crashRow(g, wh)]
			gotTotal += after[crashRow(g, wh)]
		}
		// Some subset of the group's in-flight ops explains the difference.
		fl := inflight[g]
		ok := false
		for mask := 0; mask < 1<<len(fl) && !ok; mask++ {
			d := int64(0)
			for i, op := range fl {
				if mask&(1<<i) != 0 {
					if op.capture {
						d -= op.n
					} else {
						d += op.n
					}
				}
			}
			ok = wantTotal+d == gotTotal
		}
		if !ok {
			t.Fatalf("%s group %s: recovered total %d; acknowledged ops give %d and the %d in-flight ops cannot explain the difference", mode, g, gotTotal, wantTotal, len(fl))
		}
		if len(fl) == 0 {
			for _, wh := range crashWarehouses {
				k := crashRow(g, wh)
				if after[k] != want[k] {
					t.Fatalf("%s row %v: recovered %d, acknowledged ops give %d", mode, k, after[k], want[k])
				}
			}
		}
	}
	t.Logf("%s: killed after %d acknowledged ops (%d started); recovered %+v", mode, acks, len(ops), e.Recovery())
	return after
}
