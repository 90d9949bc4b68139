package services

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildGoModule builds the main package at the root of module@version into
// bin unless bin exists: go mod download of the pinned module, a writable
// copy of its directory, go build. It is how servers that Debian does not
// package at a usable version are installed (dtm, nats-server): `go
// install` refuses modules whose version list the proxy does not serve.
// One build at a time per machine (a lock beside the binary); name labels
// the log line and errors. patch, when not nil, edits the writable copy of
// the source before the build.
func buildGoModule(ctx context.Context, log io.Writer, name, module, version, bin string, patch func(src string) error) (string, error) {
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := mkdirShared(filepath.Dir(bin)); err != nil {
		return "", fmt.Errorf("services: %s: %w", name, err)
	}
	lock, err := lockFile(ctx, bin+".lock")
	if err != nil {
		return "", err
	}
	defer lock.unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("services: %s is built from source and needs the go command: %w", name, err)
	}
	fmt.Fprintf(log, "%s: building %s@%s into %s (once per version; a few minutes)\n", name, module, version, bin)
	work, err := os.MkdirTemp(filepath.Dir(bin), "build-")
	if err != nil {
		return "", fmt.Errorf("services: %s: %w", name, err)
	}
	defer os.RemoveAll(work)
	gocmd := func(dir string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = dir
		// Outside any module: the download and the build use the module's
		// own go.mod and go.sum, whatever GOFLAGS the caller has.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GO111MODULE=on", "GOWORK=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, tailOf(stderr.String(), logTailLines))
		}
		return out, nil
	}
	out, err := gocmd(work, "mod", "download", "-json", module+"@"+version)
	var mod struct{ Dir, Error string }
	jerr := json.Unmarshal(out, &mod)
	if err != nil {
		// go mod download -json says why on stdout, in Error (a proxy
		// that cannot be reached, GOPROXY=off, an unknown version), and
		// nothing on stderr.
		if mod.Error != "" {
			return "", fmt.Errorf("services: %s: go mod download %s@%s: %s", name, module, version, mod.Error)
		}
		return "", fmt.Errorf("services: %s: %w", name, err)
	}
	if jerr != nil || mod.Dir == "" {
		return "", fmt.Errorf("services: %s: go mod download gave no directory (%s): %v", name, mod.Error, jerr)
	}
	src := filepath.Join(work, "src")
	// The module cache is read-only; go build wants to write nothing there,
	// but copying keeps the build from depending on that.
	if err := os.CopyFS(src, os.DirFS(mod.Dir)); err != nil {
		return "", fmt.Errorf("services: %s: copying %s: %w", name, mod.Dir, err)
	}
	if patch != nil {
		if err := patch(src); err != nil {
			return "", fmt.Errorf("services: %s: patching the source: %w", name, err)
		}
	}
	if _, err := gocmd(src, "build", "-o", bin+".tmp", "."); err != nil {
		return "", fmt.Errorf("services: %s: %w", name, err)
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return "", fmt.Errorf("services: %s: %w", name, err)
	}
	return bin, nil
}
