package catalog

import "testing"

// Simple case folding (CaseFolding.txt, status C and S) maps the Greek
// letters mu and iota, and the signs that share their orbits, to the small
// Greek letter; so does Cyrillic monograph uk. The representative is what
// the folded title's bytes, and so the results' order, are made of.
func TestFoldRuneGreekOrbits(t *testing.T) {
	for _, c := range []struct{ in, want rune }{
		{'\u00B5', '\u03BC'}, // MICRO SIGN
		{'\u039C', '\u03BC'}, // GREEK CAPITAL LETTER MU
		{'\u03BC', '\u03BC'}, // GREEK SMALL LETTER MU
		{'\u0345', '\u03B9'}, // COMBINING GREEK YPOGEGRAMMENI
		{'\u0399', '\u03B9'}, // GREEK CAPITAL LETTER IOTA
		{'\u03B9', '\u03B9'}, // GREEK SMALL LETTER IOTA
		{'\u1FBE', '\u03B9'}, // GREEK PROSGEGRAMMENI
		{'\u1C88', '\uA64B'}, // CYRILLIC SMALL LETTER UNBLENDED UK
		{'\uA64A', '\uA64B'}, // CYRILLIC CAPITAL LETTER MONOGRAPH UK
	} {
		if got := FoldRune(c.in); got != c.want {
			t.Errorf("FoldRune(%U) = %U, want %U", c.in, got, c.want)
		}
	}
}

// Results are ordered by the folded title's bytes: "σακάκι" (κ, U+03BA)
// before "ΣΑΜΠΟΥΆΝ" (μ, U+03BC), whatever SKU each has.
func TestSearchOrderGreekMu(t *testing.T) {
	c := New()
	for _, r := range []Record{{SKU: "1", Title: "ΣΑΜΠΟΥΆΝ", Brand: "b"}, {SKU: "2", Title: "σακάκι", Brand: "b"}, {SKU: "3", Title: "σαλάτα", Brand: "b"}} {
		if d := c.Set(r); d != "" {
			t.Fatal(d)
		}
	}
	got, d := c.Search(Query{Prefix: "σα"}, nil, nil)
	if d != "" {
		t.Fatal(d)
	}
	var skus string
	for _, r := range got {
		skus += r.SKU
	}
	if skus != "231" {
		t.Fatalf("order %q, want \"231\" (σακάκι, σαλάτα, σαμπουάν)", skus)
	}
}
