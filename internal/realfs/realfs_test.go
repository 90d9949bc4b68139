package realfs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/engine"
	"allot/inventory"
)

// Environment of the helper child.
const (
	envHelper     = "ALLOT_REALFS_HELPER" // the data directory
	envDurability = "ALLOT_REALFS_DURABILITY"
	envFileLimit  = "ALLOT_REALFS_FSIZE" // RLIMIT_FSIZE set after open, bytes
	envOpsMax     = "ALLOT_REALFS_OPS"
	envPause      = "ALLOT_REALFS_PAUSE" // wait for a line on stdin after this many acks
)

// segmentBytes is small, so that a few thousand ops fill a segment and the
// journal starts (and preallocates) the next: where a full disk or a
// read-only directory shows.
const segmentBytes = 64 << 10

// window is how many ops the child keeps in flight (they share fsyncs).
const window = 128

// afterFailure is how many ops the child still tries after the first
// failure, each of which must be refused.
const afterFailure = 20

func TestMain(m *testing.M) {
	if dir := os.Getenv(envHelper); dir != "" {
		os.Exit(helper(dir))
	}
	os.Exit(m.Run())
}

func row(i int) inventory.RowKey {
	return inventory.RowKey{SKU: "sku" + strconv.Itoa(i), Warehouse: "w1", Condition: "new", Source: "realfs"}
}

// helper is the child: open, set the fault up, stock rows until the first
// failure, then try afterFailure more. Output, one per line: "ack I",
// "fail ERROR" for the first failure, "after ERROR" or "ACKED-AFTER I" for
// each later try, "end".
func helper(dir string) int {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	say := func(format string, a ...any) {
		fmt.Fprintf(out, format+"\n", a...)
		out.Flush()
	}
	d, _ := engine.ParseDurability(os.Getenv(envDurability))
	e, err := engine.Open(engine.Config{Dir: dir, Durability: d, SegmentBytes: segmentBytes})
	if err != nil {
		say("open %v", err)
		return 0
	}
	if v := os.Getenv(envFileLimit); v != "" {
		limit, _ := strconv.ParseUint(v, 10, 64)
		signal.Ignore(syscall.SIGXFSZ) // EFBIG instead of death
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
			say("setup %v", err)
			return 1
		}
	}
	opsMax, _ := strconv.Atoi(os.Getenv(envOpsMax))
	pause, _ := strconv.Atoi(os.Getenv(envPause))
	in := bufio.NewReader(os.Stdin)
	reqs := make([]*engine.Request, 0, window)
	failed := false
	for i := 0; i < opsMax && !failed; {
		reqs = reqs[:0]
		first := i
		for ; i < opsMax && len(reqs) < window; i++ {
			r := engine.NewRequest()
			r.Op = inventory.Stock(row(i), int64(i+1), 1)
			if err := e.Submit(r); err != nil {
				r.Err = err
			}
			reqs = append(reqs, r)
		}
		for k, r := range reqs {
			err := r.Err
			if err == nil {
				err = r.Wait()
			}
			if err != nil {
				if !failed {
					say("fail %v", err)
				}
				failed = true
				continue
			}
			say("ack %d", first+k)
		}
		if pause > 0 && i >= pause && first < pause {
			say("paused")
			in.ReadString('\n')
		}
	}
	if failed {
		for k := 0; k < afterFailure; k++ {
			i := opsMax + k
			if _, err := e.Stock(row(i), int64(i+1), 1); err != nil {
				say("after %v", err)
			} else {
				say("ACKED-AFTER %d", i)
			}
		}
	}
	e.Close()
	say("end")
	return 0
}

// child runs the helper on dir and returns its stdout lines as they come.
type child struct {
	cmd   *exec.Cmd
	lines chan string
	stdin io.WriteCloser
}

func startChild(t *testing.T, dir string, d engine.Durability, opsMax, pause int, env []string, as *runAs) *child {
	t.Helper()
	bin, attr := os.Args[0], (*syscall.SysProcAttr)(nil)
	if as != nil {
		bin, attr = as.bin, as.attr
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelper+"="+dir, envDurability+"="+string(d),
		envOpsMax+"="+strconv.Itoa(opsMax), envPause+"="+strconv.Itoa(pause))
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = attr
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 1024), stdin: stdin}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return c
}

// outcome is what the child reported.
type outcome struct {
	acked     map[int]bool
	fail      string
	after     []string
	ackedLate []string
	open      string
	ended     bool
}

// collect reads the child's report to its end; at "paused" it calls
// onPause (the fault) and lets the child go on.
func (c *child) collect(t *testing.T, onPause func()) outcome {
	t.Helper()
	o := outcome{acked: map[int]bool{}}
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.cmd.Wait()
				return o
			}
			word, rest, _ := strings.Cut(line, " ")
			switch word {
			case "ack":
				i, _ := strconv.Atoi(rest)
				o.acked[i] = true
			case "fail":
				o.fail = rest
			case "after":
				o.after = append(o.after, rest)
			case "ACKED-AFTER":
				o.ackedLate = append(o.ackedLate, rest)
			case "open":
				o.open = rest
			case "paused":
				onPause()
				io.WriteString(c.stdin, "go\n")
			case "end":
				o.ended = true
			default:
				t.Logf("child: %s", line)
			}
		case <-timeout:
			t.Fatal("the child did not finish within 2 minutes")
		}
	}
}

// checkFailStop: the first failure names what failed, and every later op
// was refused as unavailable, none acknowledged.
func checkFailStop(t *testing.T, o outcome, want ...string) {
	t.Helper()
	if o.fail == "" {
		t.Fatalf("no op failed (%d acknowledged): the fault never surfaced", len(o.acked))
	}
	for _, w := range want {
		if strings.Contains(o.fail, w) {
			goto named
		}
	}
	t.Errorf("the failure %q names none of %q", o.fail, want)
named:
	if len(o.ackedLate) > 0 {
		t.Errorf("ops acknowledged after the journal failed: %v", o.ackedLate)
	}
	if len(o.after) != afterFailure {
		t.Errorf("%d of %d later ops refused", len(o.after), afterFailure)
	}
	for _, a := range o.after {
		if !strings.Contains(a, engine.ErrUnavailable.Error()) {
			t.Errorf("a later op failed with %q, not as unavailable", a)
			break
		}
	}
	if !o.ended {
		t.Error("the child did not reach its end (crashed?)")
	}
}

// checkRecovered opens dir again, the cause gone, and finds every
// acknowledged op.
func checkRecovered(t *testing.T, dir string, d engine.Durability, acked map[int]bool) {
	t.Helper()
	e, err := engine.Open(engine.Config{Dir: dir, Durability: d, SegmentBytes: segmentBytes})
	if err != nil {
		t.Fatalf("reopening once the cause is gone: %v", err)
	}
	defer e.Close()
	lost := 0
	for i := range acked {
		res, err := e.Get(row(i))
		if err != nil {
			t.Fatal(err)
		}
		if res.Code != inventory.CodeOK || res.Count != int64(i+1) {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged ops lost", lost, len(acked))
	}
	// And it takes new ops.
	if res, err := e.Stock(row(-1), 1, 1); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("a new op after recovery: %v %v", res, err)
	}
}

func TestFullDiskFailsStopAndLosesNothing(t *testing.T) {
	for _, d := range []engine.Durability{engine.DurabilityFsync, engine.DurabilityWrite} {
		t.Run(string(d), func(t *testing.T) {
			dir := t.TempDir()
			// Files may not grow past half a segment: the first
			// segment's write past that offset fails with EFBIG
			// (RLIMIT_FSIZE bounds the offset written, whatever was
			// preallocated), as a write on a full disk fails with ENOSPC.
			c := startChild(t, dir, d, 200_000, 0, []string{envFileLimit + "=" + strconv.Itoa(segmentBytes/2)}, nil)
			o := c.collect(t, func() {})
			if o.open != "" {
				t.Fatalf("open: %s", o.open)
			}
			checkFailStop(t, o, "file too large", "no space")
			checkRecovered(t, dir, d, o.acked)
		})
	}
}

// runAs is how to run the child so that permissions bind it.
type runAs struct {
	bin  string
	attr *syscall.SysProcAttr
}

// asNobody runs the child as user nobody when we are root (root ignores
// permissions), from a copy of the test binary in parent (a folder made
// reachable for nobody); as ourselves otherwise. The folders above parent
// it opens for nobody are the machine's (TMPDIR's ancestors): their modes
// are put back when the test ends.
func asNobody(t *testing.T, parent string) *runAs {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	for p := parent; p != filepath.Dir(p); p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(p, st.Mode().Perm()|0o711); err != nil {
				t.Fatal(err)
			}
			// Runs after the child's cleanup (registered later) has
			// stopped it, and before parent's TempDir removal.
			p, mode := p, st.Mode().Perm()
			t.Cleanup(func() {
				if err := os.Chmod(p, mode); err != nil && !os.IsNotExist(err) {
					t.Errorf("restoring the mode of %s: %v", p, err)
				}
			})
		}
	}
	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(parent, "realfs.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return &runAs{bin: bin, attr: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}}
}

func TestReadOnlyDataDir(t *testing.T) {
	t.Run("at open", func(t *testing.T) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "data")
		if err := os.Mkdir(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		attr := asNobody(t, parent)
		c := startChild(t, dir, engine.DurabilityFsync, 10, 0, nil, attr)
		o := c.collect(t, func() {})
		if o.open == "" || !strings.Contains(o.open, "not writable") || !strings.Contains(o.open, "permission denied") || !strings.Contains(o.open, dir) {
			t.Fatalf("opening a read-only data dir: %q, want not writable and the permission error, naming %s", o.open, dir)
		}
		if len(o.acked) > 0 {
			t.Fatalf("%d ops acknowledged on a read-only dir", len(o.acked))
		}
	})
	t.Run("while running", func(t *testing.T) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "data")
		if err := os.Mkdir(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil { // past the umask
			t.Fatal(err)
		}
		attr := asNobody(t, parent)
		c := startChild(t, dir, engine.DurabilityFsync, 200_000, 256, nil, attr)
		o := c.collect(t, func() {
			if err := os.Chmod(dir, 0o555); err != nil {
				t.Error(err)
			}
		})
		if o.open != "" {
			t.Fatalf("open: %s", o.open)
		}
		checkFailStop(t, o, "permission denied")
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		checkRecovered(t, dir, engine.DurabilityFsync, o.acked)
	})
}

// A data dir deleted under a running engine: the segments it writes are
// unlinked files, so whatever it acknowledges afterwards is lost. It must
// notice and stop acknowledging.
func TestDeletedDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	c := startChild(t, dir, engine.DurabilityFsync, 200_000, 256, nil, nil)
	o := c.collect(t, func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	checkFailStop(t, o, "deleted", "no such file")
	// The child pauses once ops 0..255 are all acknowledged and submits
	// op 256 only after the delete: any later op acknowledged is lost.
	// (This once let a whole window, ops 256..383, be acknowledged.)
	var afterDelete int
	for i := range o.acked {
		if i >= 256 {
			afterDelete++
		}
	}
	if afterDelete > 0 {
		t.Errorf("%d ops acknowledged after the data dir was deleted: a restart cannot have them", afterDelete)
	}
	// The cause gone: an empty data dir opens cleanly.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(engine.Config{Dir: dir, SegmentBytes: segmentBytes})
	if err != nil {
		t.Fatalf("opening a fresh data dir: %v", err)
	}
	e.Close()
}
