package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestShardsBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"shards"}, "want a subcommand"},
		{[]string{"shards", "split"}, `unknown subcommand "split"`},
		{[]string{"shards", "init"}, "--count is required"},
		{[]string{"shards", "init", "--count", "0", "--cluster", "nats://127.0.0.1:1"}, "--count must be 1 to 256, got 0"},
		{[]string{"shards", "show", "extra"}, `unexpected argument "extra"`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", c.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: stderr %q does not say %q", c.args, stderr.String(), c.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"shards", "--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "allot shards init") {
		t.Fatalf("--help: exit %d, %q", code, stdout.String())
	}
}
