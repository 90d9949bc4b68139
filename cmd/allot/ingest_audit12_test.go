package main

import (
	"strings"
	"testing"
)

// Every `allot ingest mysql` registered with the source as server id 7379
// unless given --server-id: two ingesters (one per table) ended each
// other's binary log streams. The default is derived per source, table
// and state file, and the help says so; an explicit --server-id 0 is
// still refused.
func TestAudit12IngestServerIDDefault(t *testing.T) {
	code, stdout, _ := runCLI("ingest", "mysql", "--help")
	if code != 0 || !strings.Contains(stdout, "-server-id") || !strings.Contains(stdout, "derived from") || strings.Contains(stdout, "(default 7379)") {
		t.Errorf("ingest mysql --help: exit %d; want --server-id's default described as derived, not 7379:\n%s", code, stdout)
	}
	code, _, stderr := runCLI("ingest", "mysql", "--table", "t", "--server-id", "0")
	if code != 2 || !strings.Contains(stderr, "--server-id must be from 1") {
		t.Errorf("ingest mysql --server-id 0: exit %d, stderr %q; want exit 2 naming the range", code, stderr)
	}
}
