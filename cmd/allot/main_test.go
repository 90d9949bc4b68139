package main

import (
	"bytes"
	"strings"
	"testing"
)

// allot help <command> prints that command's help, as <command> --help
// does; an unknown one is named and exits 2.
func TestHelpCommand(t *testing.T) {
	for _, name := range []string{"sim", "serve", "bench"} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"help", name}, &stdout, &stderr); code != 0 {
			t.Fatalf("allot help %s: exit %d, stderr %q", name, code, stderr.String())
		}
		if want := "Usage: allot " + name; !strings.Contains(stdout.String(), want) {
			t.Errorf("allot help %s lacks %q:\n%s", name, want, stdout.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"help", "nosuch"}, &stdout, &stderr); code != 2 {
		t.Errorf("allot help nosuch: exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), `unknown command "nosuch"`) {
		t.Errorf("allot help nosuch: stderr %q", stderr.String())
	}
}
