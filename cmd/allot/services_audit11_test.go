package main

import (
	"strings"
	"testing"
)

// The help says which servers take --durability: `up nats --durability
// write` used to claim "durability set to write" and change nothing.
func TestAudit11ServicesHelpSaysWhichServersIgnoreTheDurability(t *testing.T) {
	code, stdout, stderr := runCLI("services", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	help := strings.Join(strings.Fields(stdout), " ")
	for _, want := range []string{"NATS cluster always syncs", "RabbitMQ leaves durability to each queue and message", "ignores it"} {
		if !strings.Contains(help, want) {
			t.Errorf("services --help lacks %q:\n%s", want, stdout)
		}
	}
}
