package mysql

import "testing"

func TestLikePrefixEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"abc":    "abc%",
		"100%":   `100\%%`,
		"a_b":    `a\_b%`,
		`back\s`: `back\\s%`,
		"größe":  "größe%",
	} {
		if got := likePrefix(in); got != want {
			t.Errorf("likePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}
