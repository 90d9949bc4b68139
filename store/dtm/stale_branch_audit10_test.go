package dtm

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"allot/inventory"
	"allot/services/servicestest"
	"allot/store"
)

// fakeDTM answers the three requests the store sends to dtm and keeps
// every saga submitted, without ever calling a branch: the sagas of a run
// that was interrupted before dtm got to them, which the real dtm keeps
// and retries at the branch URLs they name.
type fakeDTM struct {
	srv *httptest.Server
	mu  sync.Mutex
	// submits are the bodies of POST submit, in order.
	submits []submitBody
}

type submitBody struct {
	Gid      string              `json:"gid"`
	Steps    []map[string]string `json:"steps"`
	Payloads []string            `json:"payloads"`
}

func newFakeDTM(t *testing.T) *fakeDTM {
	f := &fakeDTM{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/dtmsvr/newGid", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"gid":"fake","dtm_result":"SUCCESS"}`)
	})
	mux.HandleFunc("POST /api/dtmsvr/submit", func(w http.ResponseWriter, r *http.Request) {
		var b submitBody
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			t.Errorf("fake dtm: submit body: %v", err)
		}
		f.mu.Lock()
		f.submits = append(f.submits, b)
		f.mu.Unlock()
		io.WriteString(w, `{"dtm_result":"SUCCESS"}`)
	})
	// A saga that never finishes would keep Order waiting: it is reported
	// failed, and Order's answer is of no interest here.
	mux.HandleFunc("GET /api/dtmsvr/query", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"transaction":{"status":"failed"}}`)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeDTM) last(t *testing.T) submitBody {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.submits) == 0 {
		t.Fatal("the store submitted no saga")
	}
	return f.submits[len(f.submits)-1]
}

func openWithFakeDTM(t *testing.T, f *fakeDTM) *Store {
	t.Helper()
	servicestest.Require(t, "redis")
	st, err := Open(context.Background(), store.Config{
		Addr: strings.TrimPrefix(f.srv.URL, "http://"), Durability: store.DurabilityWrite, Workers: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st.(*Store)
}

// submitOrder has st submit a one-step order of n units of g and returns
// the saga as dtm received it.
func submitOrder(t *testing.T, st *Store, f *fakeDTM, g inventory.GroupKey, n int64) submitBody {
	t.Helper()
	se, err := st.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	var res store.HoldResult
	// The fake reports the saga failed with no branch run: Order's error
	// says so, and is expected.
	se.(store.Orderer).Order(context.Background(), "", []store.CartLine{{Group: g, N: n}}, &res)
	return f.last(t)
}

// callBranch calls branch url (its host replaced by addr) as dtm does:
// POST of the step's payload with the saga's query parameters.
func callBranch(t *testing.T, rawURL, addr, gid, op, payload string) (int, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	u.RawQuery = url.Values{"gid": {gid}, "trans_type": {"saga"}, "branch_id": {"01"}, "op": {op}}.Encode()
	resp, err := http.Post(u.String(), "application/json", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestStaleBranchCallIsRefused: a saga of a run that was interrupted is
// kept by dtm and its branches retried at the URLs that run registered,
// loopback host:port and path. A later run whose branch service listens
// on that port (here: the old URL's port replaced by the new run's, as a
// reused ephemeral port does) must neither apply the old run's action to
// its own rows nor answer it with success; its own calls still apply.
func TestStaleBranchCallIsRefused(t *testing.T) {
	f := newFakeDTM(t)
	ctx := context.Background()
	g := inventory.GroupKey{SKU: "dtm-stale", Condition: "new", Source: "own"}

	old := openWithFakeDTM(t, f)
	stale := submitOrder(t, old, f, g, 2)
	old.Close() // the run is interrupted: dtm still holds its saga

	st := openWithFakeDTM(t, f)
	defer st.Close()
	if err := st.Load(ctx, []inventory.Row{{Key: g.Row("w1"), Count: 5}}); err != nil {
		t.Fatal(err)
	}
	addr := st.ln.Addr().(*net.TCPAddr).String()
	records := func(payload string) []string {
		var p stepPayload
		if err := json.Unmarshal([]byte(payload), &p); err != nil {
			t.Fatal(err)
		}
		act, comp := p.keys()
		return []string{act, comp}
	}
	count := func() int64 {
		rows, err := st.Rows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Key == g.Row("w1") {
				return r.Count
			}
		}
		t.Fatalf("row %v is missing: %v", g.Row("w1"), rows)
		return 0
	}

	// The old run's URLs, and the same calls in the layout a bench built
	// before branch URLs carried a run (POST /action, /compensate).
	var calls [][2]string
	for _, op := range []string{"action", "compensate"} {
		calls = append(calls, [2]string{op, stale.Steps[0][op]}, [2]string{op, "http://" + addr + "/" + op})
	}
	for _, c := range calls {
		op, u := c[0], c[1]
		code, body := callBranch(t, u, addr, stale.Gid, op, stale.Payloads[0])
		t.Logf("stale %s at %s: %d %s", op, u, code, strings.TrimSpace(body))
		if code == http.StatusOK || strings.Contains(body, "SUCCESS") {
			t.Errorf("the old run's %s (%s) got a success reply: %d %s", op, u, code, body)
		}
		if c := count(); c != 5 {
			t.Errorf("after the old run's %s the row holds %d, want 5: the call was applied to this run's rows", op, c)
		}
		if n, err := st.client.Exists(ctx, records(stale.Payloads[0])...).Result(); err != nil || n != 0 {
			t.Errorf("after the old run's %s, %d branch records of the old saga exist (%v), want none", op, n, err)
		}
	}

	// The new run's own action is applied.
	own := submitOrder(t, st, f, g, 2)
	code, body := callBranch(t, own.Steps[0]["action"], addr, own.Gid, "action", own.Payloads[0])
	if code != http.StatusOK || !strings.Contains(body, "SUCCESS") {
		t.Fatalf("this run's own action: %d %s, want 200 SUCCESS", code, body)
	}
	if c := count(); c != 3 {
		t.Fatalf("after this run's own action the row holds %d, want 3", c)
	}
}
