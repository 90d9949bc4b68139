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

// The checkout crash test: a child process runs holds (some expiring
// within the run, some long), confirms, cancels and captures with
// idempotency keys, each capture sent twice with its key (a client retry);
// it is SIGKILLed at a random moment. After recovery:
//   - every acknowledged hold exists, every acknowledged confirm and cancel
//     left its hold confirmed or cancelled;
//   - every acknowledged keyed capture answers a repeat of itself with its
//     original lines, applying nothing;
//   - a hold whose deadline passed while the process was down expires
//     soon after the restart (within 3 s of the checks above);
//   - units are conserved: per group, available + held + confirmed +
//     captured = stocked, once every key has been asked (asking applies an
//     in-flight capture that had not been applied, exactly once).

const crashCheckoutEnv = "ALLOT_ENGINE_CRASH_CHECKOUT_CHILD"

func init() {
	if v := os.Getenv(crashCheckoutEnv); v != "" {
		crashCheckoutChild(v)
		os.Exit(0)
	}
}

const crashCheckoutStock = 1_000_000

func crashCheckoutChild(arg string) {
	dir, mode, _ := strings.Cut(arg, ",")
	e, err := Open(Config{Dir: dir, Durability: Durability(mode), SnapshotEveryOps: 3000})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	var out sync.Mutex
	emit := func(format string, a ...any) {
		out.Lock()
		fmt.Fprintf(os.Stdout, format, a...)
		out.Unlock()
	}
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(os.Getpid())))
			var held []string
			for seq := 0; ; seq++ {
				g := crashGroups[rng.IntN(len(crashGroups))]
				switch k := rng.IntN(4); {
				case k == 0 || len(held) == 0:
					id := fmt.Sprintf("h-%d-%d-%d", os.Getpid(), w, seq)
					ttl := time.Hour
					if rng.IntN(3) == 0 {
						ttl = time.Duration(50+rng.IntN(400)) * time.Millisecond
					}
					emit("S hold %s\n", id)
					res, err := e.Hold(id, ttl, []inventory.Demand{{Group: crashRow(g, "").Group(), N: 1 + rng.Int64N(3)}, {Group: crashRow(crashGroups[0], "").Group(), N: 1}})
					if err != nil {
						os.Exit(4)
					}
					emit("A hold %s %d\n", id, res.Code)
					if res.Code == inventory.CodeOK {
						held = append(held, id)
					}
				case k == 1:
					id := held[len(held)-1]
					held = held[:len(held)-1]
					confirm := rng.IntN(2) == 0
					var res inventory.Result
					if confirm {
						emit("S confirm %s\n", id)
						res, err = e.Confirm(id)
					} else {
						emit("S cancel %s\n", id)
						res, err = e.Cancel(id)
					}
					if err != nil {
						os.Exit(4)
					}
					emit("A %s %s %d\n", map[bool]string{true: "confirm", false: "cancel"}[confirm], id, res.Code)
				default:
					key := fmt.Sprintf("k-%d-%d-%d", os.Getpid(), w, seq)
					op := inventory.Capture(crashRow(g, "").Group(), 1+rng.Int64N(2))
					op.IdempotencyKey = key
					emit("S key %s %s %d\n", key, g, op.N)
					for range 2 { // the second is a client's retry
						res, err := e.Do(op, nil)
						if err != nil {
							os.Exit(4)
						}
						emit("A key %s %d %v\n", key, res.Code, res.Repeat)
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestCrashRecoveryCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for _, mode := range []Durability{DurabilityFsync, DurabilityWrite} {
		dir := t.TempDir()
		e := mustOpen(t, Config{Dir: dir, Durability: mode})
		for _, g := range crashGroups {
			must(e.Stock(crashRow(g, "w1"), crashCheckoutStock, 100))
		}
		e.Close()
		type acked struct{ kind, id, code string }
		var holds, keys []string
		var acks []acked
		keyGroup := map[string]string{}
		keyN := map[string]int64{}
		for round := 1; round <= 3; round++ {
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), crashCheckoutEnv+"="+dir+","+string(mode))
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			killAfter := 100 + rng.IntN(1500)
			n, killed := 0, false
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				switch {
				case f[0] == "S" && f[1] == "hold":
					holds = append(holds, f[2])
				case f[0] == "S" && f[1] == "key":
					keys = append(keys, f[2])
					keyGroup[f[2]] = f[3]
					keyN[f[2]], _ = strconv.ParseInt(f[4], 10, 64)
				case f[0] == "A":
					acks = append(acks, acked{f[1], f[2], f[3]})
					if n++; n == killAfter && !killed {
						cmd.Process.Signal(syscall.SIGKILL)
						killed = true
					}
				}
			}
			cmd.Wait()
			if !killed {
				t.Fatalf("%s round %d: the child ended before the kill", mode, round)
			}
		}
		// Give short deadlines time to pass while down.
		time.Sleep(500 * time.Millisecond)
		e = mustOpen(t, Config{Dir: dir, Durability: mode})
		for _, a := range acks {
			code, _ := strconv.Atoi(a.code)
			if inventory.Code(code) != inventory.CodeOK {
				continue
			}
			switch a.kind {
			case "hold":
				if must(e.HoldGet(a.id)).Code != inventory.CodeOK {
					t.Fatalf("%s: acknowledged hold %s is gone", mode, a.id)
				}
			case "confirm":
				if st := must(e.HoldGet(a.id)).State; st != inventory.HoldConfirmed {
					t.Fatalf("%s: acknowledged confirm of %s, state %v", mode, a.id, st)
				}
			case "cancel":
				if st := must(e.HoldGet(a.id)).State; st != inventory.HoldCancelled && st != inventory.HoldExpired {
					t.Fatalf("%s: acknowledged cancel of %s, state %v", mode, a.id, st)
				}
			}
		}
		// Every passed deadline expires soon after the restart: within 3 s
		// of these checks (the restart's replay and the checks above are
		// not counted: a loaded machine can take a second over them; the
		// ticker's bound is far below it, and a restart that never expires
		// stays held for ever).
		checked := time.Now()
		for {
			due := 0
			now := time.Now().UnixMilli()
			for _, id := range holds {
				r := must(e.HoldGet(id))
				if r.Code == inventory.CodeOK && r.State == inventory.HoldHeld && r.ExpiresAt <= now-50 {
					due++
				}
			}
			if due == 0 {
				break
			}
			if time.Since(checked) > 3*time.Second {
				t.Fatalf("%s: %d holds still held past their deadline 3 s after the restart's checks", mode, due)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Every key: an acknowledged one answers as a repeat; asking an
		// in-flight one applies it if it was lost. Then conservation.
		ackedKey := map[string]bool{}
		for _, a := range acks {
			if a.kind == "key" {
				ackedKey[a.id] = true
			}
		}
		captured := map[string]int64{}
		for _, k := range keys {
			op := inventory.Capture(crashRow(keyGroup[k], "").Group(), keyN[k])
			op.IdempotencyKey = k
			res := must(e.Do(op, nil))
			if ackedKey[k] && !res.Repeat {
				t.Fatalf("%s: acknowledged key %s was applied again after the restart", mode, k)
			}
			if res.Code == inventory.CodeOK {
				captured[keyGroup[k]] += keyN[k]
			}
		}
		held := map[string]int64{}
		for _, id := range holds {
			r := must(e.HoldGet(id))
			if r.Code != inventory.CodeOK || (r.State != inventory.HoldHeld && r.State != inventory.HoldConfirmed) {
				continue
			}
			for _, a := range r.Allocations {
				held[a.Row.SKU] += a.Count
			}
		}
		for _, g := range crashGroups {
			avail := must(e.Available(crashRow(g, "").Group())).Count
			if got := avail + held[g] + captured[g]; got != crashCheckoutStock {
				t.Fatalf("%s group %s: available %d + held or confirmed %d + captured %d = %d, stocked %d", mode, g, avail, held[g], captured[g], got, crashCheckoutStock)
			}
		}
		t.Logf("%s: %d holds, %d keys, %d acknowledgements over 3 kills", mode, len(holds), len(keys), len(acks))
		e.Close()
	}
}
