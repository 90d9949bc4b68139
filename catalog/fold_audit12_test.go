package catalog

import "testing"

// FoldRune against entries of Unicode's CaseFolding.txt (status C and S,
// simple folding). Cherokee is the one script the file folds to its
// uppercase letters (U+13A0..U+13F5): its lowercase letters (U+AB70..
// U+ABBF, U+13F8..U+13FD) came in Unicode 8.0, after folding was made
// stable. Its uppercase letters fold to themselves.
func TestFoldRuneCaseFoldingTxt(t *testing.T) {
	for _, c := range []struct{ in, want rune }{
		// Cherokee.
		{0xAB70, 0x13A0}, // AB70; C; 13A0; # CHEROKEE SMALL LETTER A
		{0xAB71, 0x13A1}, // AB71; C; 13A1; # CHEROKEE SMALL LETTER E
		{0xABBF, 0x13EF}, // ABBF; C; 13EF; # CHEROKEE SMALL LETTER YA
		{0x13F8, 0x13F0}, // 13F8; C; 13F0; # CHEROKEE SMALL LETTER YE
		{0x13FD, 0x13F5}, // 13FD; C; 13F5; # CHEROKEE SMALL LETTER MV
		{0x13A0, 0x13A0}, // CHEROKEE LETTER A: no entry, folds to itself
		{0x13EF, 0x13EF},
		{0x13F0, 0x13F0},
		{0x13F5, 0x13F5},
		// Others.
		{0x0041, 0x0061},   // 0041; C; 0061; # LATIN CAPITAL LETTER A
		{0x00B5, 0x03BC},   // 00B5; C; 03BC; # MICRO SIGN
		{0x017F, 0x0073},   // 017F; C; 0073; # LATIN SMALL LETTER LONG S
		{0x01C4, 0x01C6},   // 01C4; C; 01C6; # LATIN CAPITAL LETTER DZ WITH CARON
		{0x01C5, 0x01C6},   // 01C5; C; 01C6; # ... WITH SMALL LETTER Z WITH CARON
		{0x0345, 0x03B9},   // 0345; C; 03B9; # COMBINING GREEK YPOGEGRAMMENI
		{0x03C2, 0x03C3},   // 03C2; C; 03C3; # GREEK SMALL LETTER FINAL SIGMA
		{0x03F4, 0x03B8},   // 03F4; C; 03B8; # GREEK CAPITAL THETA SYMBOL
		{0x1C90, 0x10D0},   // 1C90; C; 10D0; # GEORGIAN MTAVRULI CAPITAL LETTER AN
		{0x1E9B, 0x1E61},   // 1E9B; C; 1E61; # LATIN SMALL LETTER LONG S WITH DOT ABOVE
		{0x1E9E, 0x00DF},   // 1E9E; S; 00DF; # LATIN CAPITAL LETTER SHARP S
		{0x1F88, 0x1F80},   // 1F88; S; 1F80; # GREEK CAPITAL LETTER ALPHA WITH PSILI AND PROSGEGRAMMENI
		{0x212A, 0x006B},   // 212A; C; 006B; # KELVIN SIGN
		{0x2C2F, 0x2C5F},   // 2C2F; C; 2C5F; # GLAGOLITIC CAPITAL LETTER CAUDATE CHRIVI
		{0x10400, 0x10428}, // 10400; C; 10428; # DESERET CAPITAL LETTER LONG I
		{0x0130, 0x0130},   // 0130: F and T only, no simple folding
		{0x0131, 0x0131},   // no entry
	} {
		if got := FoldRune(c.in); got != c.want {
			t.Errorf("FoldRune(%U) = %U, want %U", c.in, got, c.want)
		}
	}
	// Fold, and a prefix search, agree: a lowercase Cherokee query finds
	// an uppercase title and the reverse.
	if got, want := Fold("\uAB70\u13A1\u13F8"), "\u13A0\u13A1\u13F0"; got != want {
		t.Errorf("Fold = %+q, want %+q", got, want)
	}
	if !HasFoldedPrefix("\uAB70\u13A1x", Fold("\u13A0\uAB71")) {
		t.Error("HasFoldedPrefix does not match a Cherokee prefix in the other case")
	}
}
