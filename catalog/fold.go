package catalog

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// FoldRune is Unicode simple case folding of one rune, as this project
// defines it from Go's unicode tables:
//
//   - a rune whose unicode.SimpleFold orbit is itself (no case partner:
//     digits, punctuation, 'ß', 'İ', 'ı', CJK) folds to itself;
//   - a Cherokee letter folds to its uppercase letter (U+13A0..U+13F5),
//     the orbit's smallest rune m;
//   - any other rune folds to unicode.ToLower(unicode.ToUpper(m)), m the
//     smallest rune of its orbit.
//
// So 'A' and 'a' fold to 'a'; 'K', 'k' and 'K' (KELVIN SIGN) to 'k'; 'S',
// 's' and 'ſ' (LONG S) to 's'; 'Σ', 'σ' and 'ς' to 'σ'; 'ẞ' and 'ß' to
// 'ß'; 'µ' (MICRO SIGN), 'Μ' and 'μ' to 'μ'; U+0345, U+1FBE, 'Ι' and 'ι'
// to 'ι'; Cherokee 'ꭰ' (U+AB70) and 'Ꭰ' (U+13A0) to 'Ꭰ'. Two strings fold
// equal exactly when strings.EqualFold says so, rune by rune, and the
// representative is CaseFolding.txt's C+S mapping (simple folding). That
// file folds to lowercase except in Cherokee, whose lowercase letters came
// in Unicode 8.0, after case folding was made stable, so its fold stayed
// the uppercase letters: a rule of lowercase alone would order Cherokee
// titles among other titles as no simple case folding does. The
// representative is not simply the lowercase of the smallest rune: that
// is 'µ' for the orbit of 'μ' and U+0345 for that of 'ι', and titles with
// Greek mu or iota then sorted among other titles as no simple case
// folding orders them ("σαμπουάν" before "σακάκι"). No full folding ('ß'
// is not "ss"), no normalization (a precomposed 'é' and 'e'+U+0301
// differ), no locale rules (Turkish dotted I is not special).
func FoldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}
	next := unicode.SimpleFold(r)
	if next == r {
		return r
	}
	least := r
	for f := next; f != r; f = unicode.SimpleFold(f) {
		if f < least {
			least = f
		}
	}
	if isCherokeeUpper(least) {
		return least
	}
	return unicode.ToLower(unicode.ToUpper(least))
}

// isCherokeeUpper reports whether r is one of the Cherokee letters
// U+13A0..U+13F5, which CaseFolding.txt folds to themselves and their
// lowercase partners (U+AB70..U+ABBF, U+13F8..U+13FD) to them.
func isCherokeeUpper(r rune) bool { return 0x13A0 <= r && r <= 0x13F5 }

// Fold returns s with every rune folded by FoldRune. Invalid UTF-8 bytes
// are kept as they are. When nothing changes, s itself is returned (no
// allocation), which is what lets the index share a title that is already
// folded.
func Fold(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError && FoldRune(r) != r {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteByte(c)
		} else {
			b.WriteRune(FoldRune(r))
		}
		i += size
	}
	return b.String()
}

// HasFoldedPrefix reports whether Fold(s) starts with prefix, which must
// be folded already, without allocating: the brand filter runs it on every
// record a brand query walks past.
func HasFoldedPrefix(s, prefix string) bool {
	var buf [utf8.UTFMax]byte
	for prefix != "" {
		if s == "" {
			return false
		}
		c := s[0]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if prefix[0] != c {
				return false
			}
			s, prefix = s[1:], prefix[1:]
			continue
		}
		r, size := utf8.DecodeRuneInString(s)
		var folded []byte
		if r == utf8.RuneError && size == 1 {
			buf[0] = c
			folded = buf[:1]
		} else {
			folded = buf[:utf8.EncodeRune(buf[:], FoldRune(r))]
		}
		if len(prefix) < len(folded) || prefix[:len(folded)] != string(folded) {
			return false
		}
		s, prefix = s[size:], prefix[len(folded):]
	}
	return true
}

// PrefixEnd returns the least string greater than every string that
// starts with prefix, in byte order (which is code point order for
// UTF-8): prefix with its last rune replaced by the next code point
// (skipping surrogates), dropping trailing runes that are already the
// largest. A range query [prefix, PrefixEnd(prefix)) then holds exactly
// the strings with that prefix. ok is false when there is no such string
// (prefix is all U+10FFFF): the range has no upper end.
func PrefixEnd(prefix string) (end string, ok bool) {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
		switch {
		case r == unicode.MaxRune:
			continue
		case r == 0xD7FF:
			r = 0xE000
		default:
			r++
		}
		return prefix + string(r), true
	}
	return "", false
}
