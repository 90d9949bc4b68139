package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCheckIdentity(t *testing.T) {
	at := time.Date(2026, 11, 26, 17, 41, 39, 245973303, time.UTC)
	this := logIdentity{Stream: "ALLOT_s1", ID: "5f0c"}
	remade := logIdentity{Stream: "ALLOT_s1", ID: "9a17"}
	other := logIdentity{Stream: "ALLOT_s2", ID: "5f0c"}
	// Records of an earlier allot, which named the log by its creation
	// time: taken for the log of their stream.
	earlier := logIdentity{Stream: "ALLOT_s1", Created: at}
	earlierOther := logIdentity{Stream: "ALLOT_s2", Created: at}
	for _, tc := range []struct {
		name    string
		had     string // the file's contents; "" for none
		lsn     uint64
		wantErr error  // nil: accepted
		wantAny string // a refusal that is neither sentinel names this
		after   logIdentity
	}{
		{name: "empty directory", lsn: 0, after: this},
		{name: "same log", had: "this", lsn: 40, after: this},
		{name: "log made anew", had: "remade", lsn: 40, wantErr: errOtherLog, after: remade},
		{name: "another shard", had: "other", lsn: 40, wantErr: errOtherLog, after: other},
		{name: "another log, nothing applied", had: "other", lsn: 0, after: this},
		{name: "ops and no identity", lsn: 7, wantErr: errUnnamedLog},
		{name: "an earlier record of the stream", had: "earlier", lsn: 40, after: this},
		{name: "an earlier record of another stream", had: "earlierOther", lsn: 40, wantErr: errOtherLog, after: earlierOther},
		{name: "not an identity", had: "garbage", lsn: 7, wantAny: "is not a log identity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			switch tc.had {
			case "this", "remade", "other", "earlier", "earlierOther":
				id := map[string]logIdentity{"this": this, "remade": remade, "other": other, "earlier": earlier, "earlierOther": earlierOther}[tc.had]
				if err := writeIdentity(dir, id); err != nil {
					t.Fatal(err)
				}
			case "garbage":
				os.WriteFile(filepath.Join(dir, identityFile), []byte("{}"), 0o644)
			}
			err := checkIdentity(dir, this, tc.lsn)
			switch {
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("got %v, want %v", err, tc.wantErr)
			case tc.wantAny != "" && (err == nil || !strings.Contains(err.Error(), tc.wantAny)):
				t.Fatalf("got %v, want an error naming %q", err, tc.wantAny)
			case tc.wantErr == nil && tc.wantAny == "" && err != nil:
				t.Fatalf("refused: %v", err)
			}
			if err != nil && tc.wantErr != nil && !strings.Contains(err.Error(), "empty data directory") {
				t.Errorf("the refusal does not say what to do: %v", err)
			}
			if tc.after.Stream == "" {
				return
			}
			// What the directory names now: the log it may follow.
			if err := checkIdentity(dir, tc.after, 1); err != nil {
				t.Errorf("the directory does not name %s afterwards: %v", tc.after, err)
			}
		})
	}
}

// TestNodeRefusesADataDirectoryOfAnotherLog: a node whose journal follows
// a log that was deleted and made anew under the same shard name is
// refused at start, though its last op falls inside the new log's range.
// Before the data directory named its log, the node followed the new log
// from its own last op, applying the new history on top of the old one:
// its counts differed from the primary's, silently.
func TestNodeRefusesADataDirectoryOfAnotherLog(t *testing.T) {
	c := newShardCluster(t)
	c.start("a")
	a := c.waitPrimary("", 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 5 {
		if _, err := a.cli.Stock(ctx, rowKey(fmt.Sprint("old", i), "w1"), 100, 0); err != nil {
			t.Fatal(err)
		}
	}
	a.kill(syscall.SIGKILL)

	// The cluster made anew: the shard's resources deleted and created
	// again by a new node, which writes past a's last op.
	c.js.DeleteStream(ctx, c.names.stream)
	c.js.DeleteKeyValue(ctx, c.names.lease)
	c.js.DeleteObjectStore(ctx, c.names.snaps)
	c.start("b")
	b := c.waitPrimary("a", 30*time.Second)
	for i := range 20 {
		if _, err := b.cli.Stock(ctx, rowKey(fmt.Sprint("new", i), "w1"), 7, 0); err != nil {
			t.Fatal(err)
		}
	}

	err := c.launch(c.nodes["a"], nil)
	if err == nil {
		r, _ := c.nodes["a"].cli.Get(ctx, rowKey("old0", "w1"))
		t.Fatalf("node a started on a data directory of the deleted log (it serves old0, a row of that log, as %s %d)", r.Code, r.Count)
	}
	if !strings.Contains(err.Error(), "follows another log") || !strings.Contains(err.Error(), "empty data directory") {
		t.Fatalf("node a stopped, without saying why: %v", err)
	}

	// Started on an empty directory, it catches up from the log.
	if err := os.RemoveAll(c.nodes["a"].data); err != nil {
		t.Fatal(err)
	}
	if err := c.launch(c.nodes["a"], nil); err != nil {
		t.Fatal(err)
	}
}
