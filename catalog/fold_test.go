package catalog

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

func TestFoldRuneEveryRune(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		f := FoldRune(r)
		if FoldRune(f) != f {
			t.Fatalf("FoldRune(%U) = %U, which folds again to %U", r, f, FoldRune(f))
		}
		if !strings.EqualFold(string(r), string(f)) {
			t.Fatalf("FoldRune(%U) = %U, outside its SimpleFold orbit", r, f)
		}
		// Every member of the orbit folds to the same rune.
		for o := unicode.SimpleFold(r); o != r; o = unicode.SimpleFold(o) {
			if FoldRune(o) != f {
				t.Fatalf("%U folds to %U but its orbit member %U to %U", r, f, o, FoldRune(o))
			}
		}
	}
}

func TestFold(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"abc", "abc"},
		{"ABC xyz", "abc xyz"},
		{"Straße", "straße"},
		{"STRAẞE", "straße"},
		{"ΣΊΣΥΦΟΣ", "σίσυφοσ"},
		{"σίσυφος", "σίσυφοσ"},
		{"\u212Aelvin", "kelvin"},
		{"ſoft", "soft"},
		{"İstanbul", "İstanbul"},
		{"Ärger Öl Über", "ärger öl über"},
		{"日本語", "日本語"},
		{"bad\xffutf8", "bad\xffutf8"},
	} {
		if got := Fold(c.in); got != c.want {
			t.Errorf("Fold(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFoldSharesFoldedString(t *testing.T) {
	s := strings.Repeat("already folded é ", 4)
	if got := Fold(s); got != s || unsafe.StringData(got) != unsafe.StringData(s) {
		t.Fatal("Fold copied or changed a folded string")
	}
	if n := testing.AllocsPerRun(100, func() { _ = Fold(s) }); n != 0 {
		t.Fatalf("Fold of a folded string allocates %v times", n)
	}
}

func BenchmarkFold(b *testing.B) {
	s := "Über Warm Jacket Größe XL"
	for i := 0; i < b.N; i++ {
		_ = Fold(s)
	}
}

func TestHasFoldedPrefix(t *testing.T) {
	texts := []string{"", "a", "Straße", "STRAẞE", "ΣΊΣ", "\u212Aelvin", "bad\xff", "İı", "Ärger"}
	for _, s := range texts {
		for _, p := range texts {
			fp := Fold(p)
			if got, want := HasFoldedPrefix(s, fp), strings.HasPrefix(Fold(s), fp); got != want {
				t.Errorf("HasFoldedPrefix(%q, %q) = %v, want %v", s, fp, got, want)
			}
		}
		for i := range len(Fold(s)) {
			if !HasFoldedPrefix(s, Fold(s)[:i]) && utf8.ValidString(Fold(s)[:i]) {
				t.Errorf("HasFoldedPrefix(%q, %q) = false", s, Fold(s)[:i])
			}
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"ab", "ac", true},
		{"a\u00ff", "a\u0100", true},
		{"é", "ê", true},
		{"a\U0010FFFF", "b", true},
		{"\uD7FF", "\uE000", true},
		{"\U0010FFFF", "", false},
	} {
		got, ok := PrefixEnd(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("PrefixEnd(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	// Every string with the prefix sorts below the end, and the end itself
	// does not have the prefix.
	for _, p := range []string{"a", "zz", "日本", "σ", "a\u007f"} {
		end, _ := PrefixEnd(p)
		for _, s := range []string{p, p + "\U0010FFFF", p + "zzzz", p + "\U0010FFFF\U0010FFFF"} {
			if !(s < end) {
				t.Errorf("%q is not below PrefixEnd(%q) = %q", s, p, end)
			}
		}
		if strings.HasPrefix(end, p) {
			t.Errorf("PrefixEnd(%q) = %q has the prefix", p, end)
		}
	}
}
