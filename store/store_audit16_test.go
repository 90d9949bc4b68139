package store

import (
	"testing"
	"time"
)

// TestConfigValidateRefusesNegativeTimeout: a negative Timeout is as
// wrong as a negative Workers or Pipeline, which Validate refuses; taken
// as given, every connect and load would fail at once with a deadline
// error that reads like an unreachable server.
func TestConfigValidateRefusesNegativeTimeout(t *testing.T) {
	c := Config{Timeout: -time.Second}
	if err := c.Validate(); err == nil {
		t.Fatalf("Validate accepted Timeout %v", c.Timeout)
	}
	c = Config{}
	if err := c.Validate(); err != nil || c.Timeout != 30*time.Second {
		t.Fatalf("zero Config: %v, timeout %v", err, c.Timeout)
	}
}
