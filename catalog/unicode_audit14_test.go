package catalog

import (
	"testing"
	"unicode"
)

// Folding comes from Go's Unicode tables (FoldRune), and so does the
// bench's independent reference (bench/search): a Go built with another
// Unicode version folds some runes differently (Unicode 16.0 added simple
// foldings such as U+1FD3, U+1FE3 and U+FB05), which both would follow
// together, silently changing which titles a prefix finds. The README
// names the version; a build with other tables must change it knowingly.
func TestFoldingUnicodeVersion(t *testing.T) {
	const documented = "15.0.0" // README.md, "Catalog and search"
	if unicode.Version != documented {
		t.Fatalf("Go's Unicode tables are %s, the README documents folding under %s: search results change for the runes whose folding differs; check them and update the README and this test", unicode.Version, documented)
	}
}
