package fsinfo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DataRoot is the folder allot keeps its data under when no directory is
// given: the .allot folder of the allot checkout the working directory lies
// in (beside go.mod, as the peer servers' .allot/services), else
// $XDG_DATA_HOME/allot, else ~/.local/share/allot. Never the system's
// temporary folder, which is often tmpfs.
//
// It creates nothing; the caller makes the folders it needs.
func DataRoot() (string, error) {
	if root, ok := checkoutRoot(); ok {
		return filepath.Join(root, ".allot"), nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "allot"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("fsinfo: no data folder: not in an allot checkout, XDG_DATA_HOME unset and %w", err)
	}
	return filepath.Join(home, ".local", "share", "allot"), nil
}

// TempDataDir makes a fresh folder named prefix* under DataRoot()/tmp, for
// a data directory that lives only as long as a bench run: on the same
// disk as a real one would be.
func TempDataDir(prefix string) (string, error) {
	root, err := DataRoot()
	if err != nil {
		return "", err
	}
	parent := filepath.Join(root, "tmp")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("fsinfo: %w", err)
	}
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", fmt.Errorf("fsinfo: %w", err)
	}
	return dir, nil
}

// checkoutRoot walks up from the working directory to the first folder
// holding a go.mod, and reports it when that go.mod is module allot's.
func checkoutRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			return dir, isAllotModule(b)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// isAllotModule reports whether a go.mod file declares module allot.
func isAllotModule(goMod []byte) bool {
	for _, line := range strings.Split(string(goMod), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == "allot"
		}
	}
	return false
}
