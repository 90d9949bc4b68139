package services

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"allot/store"
)

// TestAudit21ConfigFilesReadableUnderAStrictUmask: services writes each
// server's configuration as root, and the server reads it as its own user
// (postgres, mysql). Under a umask of 077 (a hardened root shell) the
// files were created 0600 and the servers could not read them: PostgreSQL
// and MariaDB failed to start. A file an earlier start left 0600 stayed so
// too, since a write keeps an existing file's mode. Every file services
// writes for a server is 0644 whatever the umask.
func TestAudit21ConfigFilesReadableUnderAStrictUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	cfg := &Config{Dir: dir}
	pg := &instance{srv: postgresServer{}, cfg: cfg, dir: filepath.Join(dir, "postgres"), port: 15999}
	my := &instance{srv: mariadbServer{}, cfg: cfg, dir: filepath.Join(dir, "mariadb"), port: 15998}
	for _, in := range []*instance{pg, my} {
		if err := os.MkdirAll(in.dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A file an earlier start left unreadable.
	if err := os.WriteFile(postgresServer{}.confFile(pg), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (postgresServer{}).writeConf(pg, store.DurabilityFsync); err != nil {
		t.Fatal(err)
	}
	if err := (mariadbServer{}).writeConf(my, store.DurabilityFsync); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "shared.txt")
	if err := writeShared(shared, []byte("x\n")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{postgresServer{}.confFile(pg), filepath.Join(my.dir, "my.cnf"), shared} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != 0o644 {
			t.Errorf("%s: mode %v under umask 077, want -rw-r--r-- (its server reads it as another user)", f, got)
		}
	}
}

// TestAudit21DirectoriesReachableUnderAStrictUmask: under a umask of 077
// the directories services made (the services folder and its parents, an
// instance's folder, /var/tmp's fallback root) were 0700 and root's: a
// server running as its own user could not reach its folder, nor the
// fallback meant for exactly that case. Each directory services creates
// is 0755 whatever the umask; one that exists keeps its mode.
func TestAudit21DirectoriesReachableUnderAStrictUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	root := t.TempDir()
	kept := filepath.Join(root, "kept")
	if err := os.Mkdir(kept, 0o700); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(kept, "a", "b")
	if err := mkdirShared(deep); err != nil {
		t.Fatal(err)
	}
	in := &instance{srv: postgresServer{}, cfg: &Config{Dir: root}, dir: filepath.Join(root, "x", "postgres"), port: 15999}
	if err := in.makeDir(); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]os.FileMode{
		kept: 0o700, filepath.Join(kept, "a"): 0o755, deep: 0o755,
		filepath.Join(root, "x"): 0o755, in.dir: 0o755,
	} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v under umask 077, want %v", d, got, want)
		}
	}
	if err := mkdirShared(deep); err != nil {
		t.Errorf("mkdirShared of a directory that exists: %v", err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := mkdirShared(filepath.Join(file, "sub")); err == nil {
		t.Error("mkdirShared under a regular file: no error")
	}
}

// TestAudit21ServersStartUnderAStrictUmask: PostgreSQL and MariaDB, which
// run as their own users, start from `up` under root's umask of 077 (they
// failed to read the configuration services wrote for them).
func TestAudit21ServersStartUnderAStrictUmask(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs PostgreSQL and MariaDB as other users")
	}
	cfg := privateConfig(t)
	requireInstalled(t, cfg, Postgres)
	requireInstalled(t, cfg, MariaDB)
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	if err := Up(context.Background(), cfg, Postgres, MariaDB); err != nil {
		t.Fatalf("up under umask 077: %v", err)
	}
	for _, name := range []string{Postgres, MariaDB} {
		if st := statusOf(t, cfg, name); st.State != StateRunning {
			t.Errorf("%s: %v after up under umask 077", name, st)
		}
	}
}
