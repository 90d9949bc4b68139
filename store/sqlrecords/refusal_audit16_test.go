package sqlrecords

import (
	"strings"
	"testing"

	"allot/store"
)

// A kv batch is one statement: a --pipeline whose statement would carry
// more than ParamsMax placeholders is refused before the run (every write
// batch of --pipeline 30000 failed on PostgreSQL with "extended protocol
// limited to 65535 parameters").
func TestPipelineRefusal(t *testing.T) {
	for _, c := range []struct {
		u      store.Use
		refuse bool
	}{
		{store.Use{Workload: "kv", Pipeline: 21845}, false},
		{store.Use{Workload: "kv", Pipeline: 21846}, true},
		{store.Use{Workload: "kv", Pipeline: 65535, ReadOnly: true}, false},
		{store.Use{Workload: "kv", Pipeline: 65536, ReadOnly: true}, true},
		{store.Use{Workload: "rw", Pipeline: 100000}, false},
		{store.Use{Workload: "ims", Pipeline: 100000}, false},
	} {
		r := PipelineRefusal(c.u)
		if (r != "") != c.refuse {
			t.Errorf("%+v: refusal %q, want refused %v", c.u, r, c.refuse)
		}
		if r != "" && !strings.Contains(r, "--pipeline") {
			t.Errorf("%+v: refusal %q does not name the flag", c.u, r)
		}
	}
}
