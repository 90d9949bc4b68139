package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// rwSpaceIDEnv makes TestRWSpaceIDHelperAudit16 print one RWSpaceID and
// exit: the child of TestRWSpaceIDAcrossPIDNamespaces.
const rwSpaceIDEnv = "ALLOT_AUDIT16_PRINT_RW_SPACE_ID"

func TestRWSpaceIDHelperAudit16(t *testing.T) {
	if os.Getenv(rwSpaceIDEnv) == "" {
		t.Skip("helper of TestRWSpaceIDAcrossPIDNamespaces")
	}
	fmt.Printf("space-id=%s\n", RWSpaceID())
}

// TestRWSpaceIDAcrossPIDNamespaces: RWSpaceID promises an id no other
// live process's record space has, and the adapters act on it (the SQL
// ones DROP TABLE IF EXISTS the name first; allot's rows are shared by
// source). Two processes in two PID namespaces (two containers on one
// host, sharing a server) have the same pid: they must still get two
// ids, as CatalogID already does by being random.
func TestRWSpaceIDAcrossPIDNamespaces(t *testing.T) {
	if os.Getenv(rwSpaceIDEnv) != "" {
		t.Skip("running as the helper")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1) to make a PID namespace")
	}
	if out, err := exec.Command(unshare, "-U", "-r", "-p", "-f", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a PID namespace here: %v %s", err, out)
	}
	ids := make([]string, 2)
	for i := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, unshare, "-U", "-r", "-p", "-f", os.Args[0], "-test.run=^TestRWSpaceIDHelperAudit16$", "-test.count=1")
		cmd.Env = append(os.Environ(), rwSpaceIDEnv+"=1")
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if id, ok := strings.CutPrefix(l, "space-id="); ok {
				ids[i] = id
			}
		}
		if ids[i] == "" {
			t.Fatalf("helper printed no id:\n%s", out)
		}
	}
	if ids[0] == ids[1] {
		t.Fatalf("two processes with the same pid in two PID namespaces got the same record space id %q: one run's DROP TABLE IF EXISTS (or its allot rows) would be the other's", ids[0])
	}
	t.Logf("ids %q and %q", ids[0], ids[1])
}
