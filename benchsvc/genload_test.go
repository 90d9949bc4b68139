package benchsvc

import (
	"net/http"
	"strings"
	"testing"
)

// seedBody is the seed load-test bench's request, byte for byte.
const seedBody = `{"threads":5,"load":1,"timeInMilis":1000,"transactional":false,"durable":true,"requestType":"READ"}`

func TestParseGenLoadSeedBody(t *testing.T) {
	g, err := ParseGenLoad([]byte(seedBody))
	if err != nil {
		t.Fatal(err)
	}
	want := GenLoad{Threads: 5, Load: 1, TimeInMilis: 1000, Durable: true, RequestType: "READ"}
	if g != want {
		t.Errorf("parsed %+v, want %+v", g, want)
	}
	got := strings.Join(GenLoadArgs("mysql", g, GenLoadOps(g)), " ")
	wantArgs := "--workload=rw --stores=mysql --workers=5 --duration=1000ms --ops=2000000 --request-type=READ --transactional=false --durable=true --durability=fsync"
	if got != wantArgs {
		t.Errorf("args\n %s\nwant\n %s", got, wantArgs)
	}
	g = GenLoad{Threads: 2, Load: 20, TimeInMilis: 5000, Transactional: true, RequestType: "MODIFY_LOCKED", Lock: "soft"}
	got = strings.Join(GenLoadArgs("rabbitmq", g, GenLoadOps(g)), " ")
	for _, w := range []string{"--batch=20", "--durable=false", "--durability=write", "--lock=soft", "--transactional=true", "--ops=10000000"} {
		if !strings.Contains(got, w) {
			t.Errorf("args %s lack %s", got, w)
		}
	}
}

func TestParseGenLoadRejects(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"threads":0,"timeInMilis":1000,"requestType":"READ"}`, "threads"},
		{`{"threads":"5","timeInMilis":1000,"requestType":"READ"}`, "threads"},
		{`{"timeInMilis":1000}`, "requestType is required"},
		{`{"requestType":"READ"}`, "timeInMilis is required"},
		{`{"timeInMilis":0,"requestType":"READ"}`, "timeInMilis must be"},
		{`{"timeInMilis":1000,"requestType":"DELETE"}`, "DELETE"},
		{`{"timeInMilis":1000,"requestType":"READ","load":5}`, "needs transactional"},
		{`{"timeInMilis":1000,"requestType":"READ","thread":5}`, "unknown field"},
		{`{"timeInMilis":1000,"requestType":"WRITE","lock":"soft"}`, "lock applies"},
		{`{"timeInMilis":1000,"requestType":"MODIFY_LOCKED","lock":"firm"}`, "firm"},
		{`{"timeInMilis":1e3,"requestType":"READ"}`, "timeInMilis"},
		{`{"timeInMilis":1000,"requestType":"READ"} {}`, "more than one"},
		{`nonsense`, "body"},
	} {
		_, err := ParseGenLoad([]byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.body, err, tc.want)
		}
	}
}

func TestGenLoadEndpoint(t *testing.T) {
	_, srv, p := newTestService(t, Config{})
	code, m := do(t, "POST", srv.URL+"/test/gen-load/mysql", seedBody)
	if code != http.StatusOK {
		t.Fatalf("gen-load: %d %v", code, m)
	}
	count, _ := m["count"].(float64)
	timeMs, _ := m["timeMs"].(float64)
	// The fake job runs 1000 ms (--duration from timeInMilis) and counts
	// 100 ops every 5 ms.
	if count < 1000 || timeMs < 900 || timeMs > 5000 {
		t.Errorf("reply %v: want a count and about 1000 ms", m)
	}
	if !strings.Contains(strings.Join(p.args[0], " "), "--duration=1000ms") {
		t.Errorf("args %v", p.args[0])
	}
	if code, m := do(t, "POST", srv.URL+"/test/gen-load/nope", seedBody); code != http.StatusNotFound {
		t.Errorf("unknown store: %d %v", code, m)
	}
	if code, m := do(t, "POST", srv.URL+"/test/gen-load/mysql", `{"threads":-1}`); code != http.StatusBadRequest {
		t.Errorf("bad body: %d %v", code, m)
	}
}
