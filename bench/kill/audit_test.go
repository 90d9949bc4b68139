package kill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
)

// loseRowsServer is a fake server whose restart comes back without the
// rows of one capture group per worker that no op touched: a store that
// lost part of what it acknowledged loading (Load is a write the store
// acknowledged, as much as a capture is).
type loseRowsServer struct {
	*fakeServer
	// suffixes name the SKUs whose rows the restart loses.
	suffixes []string
}

func (s loseRowsServer) Start(ctx context.Context) error {
	if err := s.fakeServer.Start(ctx); err != nil {
		return err
	}
	f := s.fakeServer
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.rows {
		for _, suffix := range s.suffixes {
			if strings.HasSuffix(k.SKU, suffix) {
				delete(f.rows, k)
			}
		}
	}
	return nil
}

func auditLosingRows(t *testing.T, d store.Durability) *Result {
	t.Helper()
	const workers, opsMax = 4, 200_000
	// The last group of each worker (newRoundPlan's count): the kill
	// comes long before a worker gets there.
	groups := (opsMax/workers)*quantityMax/groupUnits + 1
	last := groups - 1
	var suffixes []string
	for w := range workers {
		suffixes = append(suffixes, fmt.Sprintf("w%dg%d", w, last))
	}
	f := newFakeServer(crashKeepAll)
	res := Run(context.Background(), Config{
		Store: "fake", Durability: d, Kills: 2, Workers: workers, Seed: 7, OpsMax: opsMax,
		KillAfterMin: 30 * time.Millisecond, KillAfterMax: 60 * time.Millisecond,
		Open: f.open, Server: loseRowsServer{f, suffixes},
	})
	if res.Error != "" || res.Kills != 2 {
		t.Fatalf("audit: %+v", res)
	}
	if want := int64(2 * workers * groupWarehouses); res.RowsMissing != want || res.LostAcked != 0 {
		t.Fatalf("the restart lost %d loaded rows no op touched; the audit counted %d missing, %d acked ops lost", want, res.RowsMissing, res.LostAcked)
	}
	return res
}

// Rows the store acknowledged loading and lost to a process crash break
// the promise of fsync and write as much as a lost capture does: the audit
// must not call that store ok, even when no op had touched those rows.
func TestAuditFailsAStoreThatLosesLoadedRows(t *testing.T) {
	for _, d := range []store.Durability{store.DurabilityFsync, store.DurabilityWrite} {
		res := auditLosingRows(t, d)
		if !res.Failed() || !strings.HasPrefix(res.Verdict(), "FAILED") {
			t.Errorf("%s: %d loaded rows lost and the audit passed (verdict %q)", d, res.RowsMissing, res.Verdict())
		}
	}
	// none promises nothing: losing rows is what it costs.
	if res := auditLosingRows(t, store.DurabilityNone); res.Failed() || strings.HasPrefix(res.Verdict(), "FAILED") {
		t.Errorf("none: losing rows failed the audit (verdict %q)", res.Verdict())
	}
}

// An audit whose every kill came after the workers had sent all their ops
// crashed an idle server: it never tested what a kill under load does, so
// it must not pass as if it had.
func TestAuditWithoutLoadAtAnyKillDoesNotPass(t *testing.T) {
	f := newFakeServer(crashKeepAll)
	res := Run(context.Background(), Config{
		Store: "fake", Durability: store.DurabilityFsync, Kills: 2, Workers: 4, Seed: 7, OpsMax: 40,
		KillAfterMin: 50 * time.Millisecond, KillAfterMax: 60 * time.Millisecond,
		Open: f.open, Server: f,
	})
	if res.Error != "" || res.Kills != 2 {
		t.Fatalf("audit: %+v", res)
	}
	if res.KilledEarly != 2 {
		t.Fatalf("10 ops per worker, killed after 50 ms: %d of 2 rounds killed early", res.KilledEarly)
	}
	if !res.Failed() || res.Verdict() == "ok" {
		t.Fatalf("no kill came under load and the audit passed (verdict %q)", res.Verdict())
	}
	var b bytes.Buffer
	if err := WriteTable(&b, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "not under load") {
		t.Fatalf("the table does not say why:\n%s", b.String())
	}
}

// The JSON a machine reads (bench --kill --json) carries the verdict and
// whether the audit failed, decided as the table decides them: a reader
// recomputing them from the counts would have to know each mode's promise.
func TestResultJSONCarriesTheVerdict(t *testing.T) {
	for _, tt := range []struct {
		d      store.Durability
		failed bool
	}{{store.DurabilityWrite, true}, {store.DurabilityNone, false}} {
		r := &Result{Store: "s", Durability: string(tt.d), Kills: 1, Acked: 10, LostAcked: 3}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Verdict   *string `json:"verdict"`
			Failed    *bool   `json:"failed"`
			LostAcked int64   `json:"lost_acked"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Verdict == nil || *got.Verdict != r.Verdict() || got.Failed == nil || *got.Failed != tt.failed || got.LostAcked != 3 {
			t.Errorf("%s: JSON %s, want verdict %q and failed %v", tt.d, b, r.Verdict(), tt.failed)
		}
	}
}

// A read-back that never ran is no evidence that the store lost anything:
// the audit must stop with an error, not judge every op lost.
func TestAuditThatCannotReadBackIsAnError(t *testing.T) {
	f := newFakeServer(crashKeepAll)
	res := Run(context.Background(), Config{
		Store: "fake", Durability: store.DurabilityFsync, Kills: 1, Workers: 2, Seed: 7, OpsMax: 4000,
		KillAfterMin: 10 * time.Millisecond, KillAfterMax: 20 * time.Millisecond,
		ReadTimeout: -time.Second, Open: f.open, Server: f,
	})
	if res.Error == "" || res.LostAcked != 0 || res.RowsMissing != 0 {
		t.Fatalf("a read-back bounded by %v judged the store: verdict %q: %+v", -time.Second, res.Verdict(), res)
	}
}

// rowsFailServer is a fake whose reads fail after the restart (a server
// that answers but cannot serve its rows yet), though opening it works.
type rowsFailServer struct{ *fakeServer }

var errRowsNotYet = errors.New("fake: rows not readable yet")

type rowsFailStore struct{ fakeStore }

func (s rowsFailStore) Rows(context.Context) ([]inventory.Row, error) { return nil, errRowsNotYet }

func (s rowsFailServer) open(ctx context.Context) (store.Store, error) {
	st, err := s.fakeServer.open(ctx)
	if err != nil {
		return nil, err
	}
	return rowsFailStore{st.(fakeStore)}, nil
}

// When the rows cannot be read back, the audit stops with the reason: it
// never judges rows it did not read.
func TestAuditStopsWhenTheRowsCannotBeRead(t *testing.T) {
	f := rowsFailServer{newFakeServer(crashKeepAll)}
	res := Run(context.Background(), Config{
		Store: "fake", Durability: store.DurabilityFsync, Kills: 1, Workers: 2, Seed: 7, OpsMax: 4000,
		KillAfterMin: 10 * time.Millisecond, KillAfterMax: 20 * time.Millisecond,
		ReadTimeout: 2 * time.Second, Open: f.open, Server: f,
	})
	if !strings.Contains(res.Error, errRowsNotYet.Error()) || res.LostAcked != 0 || res.RowsMissing != 0 {
		t.Fatalf("rows that could not be read: verdict %q: %+v", res.Verdict(), res)
	}
}
