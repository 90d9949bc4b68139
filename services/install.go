package services

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// policyRCPath is Debian's hook that invoke-rc.d asks before starting a
// service from a package's install script; exit code 101 means "do not".
const policyRCPath = "/usr/sbin/policy-rc.d"

// ensureInstalled installs the Debian packages of every server in list that
// is missing. Only root can; anyone else gets an error naming the packages.
// Installs are serialised across processes by one machine-wide lock file
// (not one per Config.Dir: two directories' tests install at once too), so
// that a second apt-get does not fail on apt's own locks.
func ensureInstalled(ctx context.Context, cfg *Config, list []server) error {
	missing := missingPackages(list)
	if len(missing) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("services: not installed: %s; run allot as root to install them, or install them yourself: apt-get install -y %s",
			strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	lock, err := lockFile(ctx, filepath.Join(os.TempDir(), "allot-services-install.lock"))
	if err != nil {
		return err
	}
	defer lock.unlock()
	// Another process may have installed them while we waited.
	if missing = missingPackages(list); len(missing) == 0 {
		return nil
	}
	fmt.Fprintf(cfg.Log, "installing %s (apt-get)\n", strings.Join(missing, " "))

	// Debian's packages start their default instances on the standard
	// ports from their install scripts. Forbid that while we install, unless
	// the machine already has a policy (which we leave alone).
	if _, err := os.Stat(policyRCPath); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(policyRCPath, []byte("#!/bin/sh\n# written by allot services while installing packages\nexit 101\n"), 0o755); err != nil {
			return fmt.Errorf("services: writing %s to keep package installs from starting servers: %w", policyRCPath, err)
		}
		defer os.Remove(policyRCPath)
	}
	apt := func(args ...string) error {
		argv := append([]string{"apt-get", "-q", "-y", "-o", "DPkg::Lock::Timeout=300"}, args...)
		cmd := command(ctx, nil, "/", argv...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("services: %s: %w\n%s", strings.Join(argv, " "), err, tailOf(string(out), logTailLines))
		}
		return nil
	}
	if err := apt("update"); err != nil {
		return err
	}
	if err := apt(append([]string{"install", "--no-install-recommends"}, missing...)...); err != nil {
		return err
	}
	if missing = missingPackages(list); len(missing) != 0 {
		return fmt.Errorf("services: apt-get installed %s but their binaries are still not found", strings.Join(missing, ", "))
	}
	return nil
}

// missingPackages lists the packages of the servers whose binaries are not
// there.
func missingPackages(list []server) []string {
	var missing []string
	for _, s := range list {
		if !s.installed() {
			missing = append(missing, s.packages()...)
		}
	}
	return missing
}
