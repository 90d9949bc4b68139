package layout

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// allowed maps a package (or a prefix ending in "/") to the allot packages
// it may import. A package matched by no rule may import anything.
//
// catalog is a leaf like vfs: the pure catalog index (folding, ordering,
// search) that the state machine keeps beside the rows.
var allowed = map[string][]string{
	"allot/catalog":       {},
	"allot/inventory":     {"allot/catalog"},
	"allot/vfs":           {},
	"allot/journal":       {"allot/inventory", "allot/catalog", "allot/vfs"},
	"allot/engine":        {"allot/inventory", "allot/catalog", "allot/journal", "allot/vfs"},
	"allot/store":         {"allot/inventory", "allot/catalog"},
	"allot/workload":      {"allot/inventory"},
	"allot/client":        {"allot/inventory", "allot/catalog", "allot/changes/event"},
	"allot/changes/event": {"allot/inventory"},
}

// forbidden lists imports no package under a prefix may have.
var forbidden = map[string][]string{
	// An adapter finds the peers' addresses in store (store/peers.go):
	// services starts servers and imports store, not the other way.
	"allot/store":   {"allot/services"},
	"allot/store/":  {"allot/bench", "allot/report", "allot/cmd/", "allot/services"},
	"allot/server":  {"allot/store", "allot/bench", "allot/report"},
	"allot/engine":  {"allot/server", "allot/store", "allot/bench"},
	"allot/bench":   {"allot/server", "allot/cmd/"},
	"allot/report":  {"allot/server", "allot/engine", "allot/store/"},
	"allot/journal": {"allot/engine"},
}

// pkg is one package as go list describes it.
type pkg struct {
	ImportPath string
	Imports    []string
}

func TestImportDirections(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "allot/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkg
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list returned %d packages", len(pkgs))
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestViolationsFindsWrongImports proves the check's power on packages
// made up to break each kind of rule.
func TestViolationsFindsWrongImports(t *testing.T) {
	for _, c := range []struct {
		p    pkg
		want string
	}{
		{pkg{"allot/store/redis", []string{"allot/store", "allot/services"}}, "allot/store/redis imports allot/services"},
		{pkg{"allot/store", []string{"allot/services"}}, "allot/store imports allot/services"},
		{pkg{"allot/engine", []string{"allot/server"}}, "allot/engine imports allot/server"},
		{pkg{"allot/inventory", []string{"allot/journal"}}, "allot/inventory imports allot/journal"},
	} {
		got := violations([]pkg{c.p})
		if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), c.want) {
			t.Errorf("%s importing %v: violations %q, want one naming %q", c.p.ImportPath, c.p.Imports, got, c.want)
		}
	}
	if got := violations([]pkg{{"allot/store/redis", []string{"allot/store", "allot/inventory"}}}); len(got) != 0 {
		t.Errorf("an adapter importing store and inventory: %q", got)
	}
}

// violations lists every import of pkgs that breaks allowed or forbidden.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, "allot/") {
				continue
			}
			if list, ok := allowed[p.ImportPath]; ok && !matchesAny(imp, list) {
				out = append(out, fmt.Sprintf("%s imports %s; it may import only %v", p.ImportPath, imp, list))
			}
			for prefix, bad := range forbidden {
				if matches(p.ImportPath, prefix) && matchesAny(imp, bad) {
					out = append(out, fmt.Sprintf("%s imports %s, which packages under %s must not", p.ImportPath, imp, prefix))
				}
			}
		}
	}
	return out
}

func matches(path, pattern string) bool {
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(path, pattern)
	}
	return path == pattern
}

func matchesAny(path string, patterns []string) bool {
	for _, p := range patterns {
		if matches(path, p) {
			return true
		}
	}
	return false
}
