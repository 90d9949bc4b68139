package services

import (
	"context"
	_ "embed"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"text/template"

	"github.com/tarantool/go-tarantool/v2"

	"allot/store"
)

//go:embed tarantool_init.lua
var tarantoolInit string

// tarantoolServer runs Tarantool from Debian's tarantool package. wal_mode
// cannot change while it runs, so a durability change is a restart; the
// instance daemonises itself from box.cfg{background = true}.
type tarantoolServer struct{}

func (tarantoolServer) name() string                { return Tarantool }
func (tarantoolServer) basePort() int               { return 13301 }
func (tarantoolServer) packages() []string          { return []string{"tarantool"} }
func (tarantoolServer) runAs() string               { return "" }
func (tarantoolServer) exeNames() []string          { return []string{"tarantool"} }
func (tarantoolServer) pidFile(in *instance) string { return filepath.Join(in.dir, "tarantool.pid") }
func (tarantoolServer) logFile(in *instance) string { return filepath.Join(in.dir, "tarantool.log") }
func (tarantoolServer) stopSignal() syscall.Signal  { return syscall.SIGTERM }
func (tarantoolServer) installed() bool             { return findBinary("tarantool") != "" }

func (s tarantoolServer) start(ctx context.Context, in *instance) (int, error) {
	t, err := template.New("init.lua").Parse(tarantoolInit)
	if err != nil {
		return 0, err
	}
	var b strings.Builder
	err = t.Execute(&b, map[string]string{
		"Dir": in.dir, "WALMode": string(in.durability), "PIDFile": s.pidFile(in), "Log": s.logFile(in),
		"User": TarantoolUser, "Password": TarantoolPassword, "Listen": in.addr(),
	})
	if err != nil {
		return 0, err
	}
	init := filepath.Join(in.dir, "init.lua")
	if err := writeShared(init, []byte(b.String())); err != nil {
		return 0, err
	}
	// The command returns when box.cfg has forked the instance into the
	// background; an error in the script before that fails it here.
	_, err = run(ctx, in.user, in.dir, findBinary("tarantool"), init)
	return 0, err
}

func (tarantoolServer) probe(ctx context.Context, in *instance) (probeResult, error) {
	conn, err := tarantool.Connect(ctx, tarantool.NetDialer{Address: in.addr(), User: TarantoolUser, Password: TarantoolPassword},
		tarantool.Opts{Timeout: probeTimeout})
	if err != nil {
		return probeResult{}, err
	}
	defer conn.Close()
	var out []string
	if err := conn.Do(tarantool.NewEvalRequest("return box.info.version, box.cfg.wal_mode, box.info.status")).GetTyped(&out); err != nil {
		return probeResult{}, err
	}
	if len(out) != 3 {
		return probeResult{}, fmt.Errorf("tarantool answered %v to the status probe", out)
	}
	if out[2] != "running" {
		return probeResult{}, fmt.Errorf("tarantool is %s, not running", out[2])
	}
	d, err := store.ParseDurability(out[1])
	if err != nil {
		return probeResult{}, fmt.Errorf("tarantool runs with wal_mode %q: %w", out[1], err)
	}
	return probeResult{version: "Tarantool " + out[0], durability: d}, nil
}

// setDurability cannot apply wal_mode at runtime: ask for a restart.
func (tarantoolServer) setDurability(context.Context, *instance, store.Durability) (bool, error) {
	return true, nil
}
