package benchsvc

import (
	"strings"
	"testing"

	"allot/internal/syncbuf"
)

// syncBuffer is a log the service's goroutines may write at once.
type syncBuffer = syncbuf.Buffer

// The log line of a cancelled run read "run <id> cancelled cancelled":
// the state, then the error that only repeats it. A finished run's line
// names its state once, and a failed run's its error after the state.
func TestAudit10bRunEndLogLine(t *testing.T) {
	var log syncBuffer
	s, srv, _ := newTestService(t, Config{Log: &log})
	_, m := do(t, "POST", srv.URL+"/v1/runs", `{"duration":"1h"}`)
	cancelled := m["id"].(string)
	do(t, "DELETE", srv.URL+"/v1/runs/"+cancelled, "")
	waitState(t, s, cancelled)
	_, m = do(t, "POST", srv.URL+"/v1/runs", `{"duration":"10ms"}`)
	done := m["id"].(string)
	waitState(t, s, done)
	_, m = do(t, "POST", srv.URL+"/v1/runs", `{"duration":"10ms","fail":true}`)
	failed := m["id"].(string)
	waitState(t, s, failed)
	lines := log.String()
	for _, want := range []string{
		"allot bench serve: run " + cancelled + " cancelled\n",
		"allot bench serve: run " + done + " done\n",
		"allot bench serve: run " + failed + " failed: 1 of 1 runs failed\n",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("log lacks %q:\n%s", want, lines)
		}
	}
	if strings.Contains(lines, "cancelled cancelled") {
		t.Errorf("log repeats the state:\n%s", lines)
	}
}
