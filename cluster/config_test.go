package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		c := Config{URLs: "nats://127.0.0.1:14220", NodeID: "a"}
		c.Engine.Dir = t.TempDir()
		c.Server.RESPAddr = "127.0.0.1:0"
		return c
	}
	c := valid()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Shard != "main" || c.LeaseTTL != 3*time.Second || !c.Engine.Replicated {
		t.Fatalf("defaults: shard %q, lease %v, replicated %v", c.Shard, c.LeaseTTL, c.Engine.Replicated)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.URLs = " " }, "no NATS URL"},
		{func(c *Config) { c.Shard = "a.b" }, `shard name "a.b"`},
		{func(c *Config) { c.Shard = strings.Repeat("x", 33) }, "1 to 32 letters"},
		{func(c *Config) { c.LeaseTTL = 100 * time.Millisecond }, "below 500ms"},
		{func(c *Config) { c.Fault = "drop-everything" }, `unknown fault "drop-everything"`},
		{func(c *Config) { c.Engine.Dir = "" }, "no data directory"},
		{func(c *Config) { c.Server.RESPAddr = "" }, "neither a RESP nor an HTTP address"},
	} {
		c := valid()
		tc.change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v", tc.want, err)
		}
	}
}

func TestNames(t *testing.T) {
	n, err := namesOf("eu-1")
	if err != nil {
		t.Fatal(err)
	}
	if n != (names{stream: "ALLOT_eu-1", subject: "allot.eu-1.log", lease: "ALLOT_eu-1_LEASE", snaps: "ALLOT_eu-1_SNAP"}) {
		t.Fatalf("names: %+v", n)
	}
	for _, bad := range []string{"", "a b", "a*", "a>", "é"} {
		if _, err := namesOf(bad); err == nil {
			t.Errorf("shard %q accepted", bad)
		}
	}
}
