package layout

import (
	"encoding/json"
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
	"allot/store/":  {"allot/bench", "allot/report", "allot/cmd/"},
	"allot/server":  {"allot/store", "allot/bench", "allot/report"},
	"allot/engine":  {"allot/server", "allot/store", "allot/bench"},
	"allot/bench":   {"allot/server", "allot/cmd/"},
	"allot/report":  {"allot/server", "allot/engine", "allot/store/"},
	"allot/journal": {"allot/engine"},
}

func TestImportDirections(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "allot/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, "allot/") {
				continue
			}
			if list, ok := allowed[p.ImportPath]; ok && !matchesAny(imp, list) {
				t.Errorf("%s imports %s; it may import only %v", p.ImportPath, imp, list)
			}
			for prefix, bad := range forbidden {
				if matches(p.ImportPath, prefix) && matchesAny(imp, bad) {
					t.Errorf("%s imports %s, which packages under %s must not", p.ImportPath, imp, prefix)
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("go list returned %d packages", checked)
	}
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
