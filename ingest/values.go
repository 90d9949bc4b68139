package ingest

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

// columnTypes says how to read a row image's values as the text the
// snapshot reads for them. The snapshot's SELECT gets text the server
// renders in the connection's character set (utf8mb4); the binary log
// carries what the storage holds: an ENUM's index, a SET's bit mask, a
// string's bytes in its column's character set. Without this a colour
// ENUM arrives as "3" and a latin1 title as bytes allot refuses as invalid
// UTF-8. All maps are keyed by column ordinal (0-based).
type columnTypes struct {
	enums    map[int][]string // ENUM members; the binary log holds index+1
	sets     map[int][]string // SET members; bit i is member i
	charsets map[int]string   // character set of a character column
}

// typesOf returns the column types of rows that came with table map t: from
// the map itself where the source writes that metadata
// (binlog_row_metadata=FULL carries ENUM and SET members, every level
// carries character sets), else from what was read at start, which holds
// as long as the table is not altered (without column names an ALTER stops
// the ingester).
func (in *Ingester) typesOf(t *replication.TableMapEvent) (columnTypes, error) {
	ct := in.startTypes
	if t == nil {
		return ct, nil
	}
	if len(t.ColumnNameString()) > 0 {
		// The full metadata: what was read at start may be stale (ALTER
		// TABLE is followed), and the map has all of it.
		ct = columnTypes{}
	}
	enumCharsets := t.EnumSetCollationMap()
	members := func(m map[int][]string) (map[int][]string, error) {
		for i, names := range m {
			cs := in.collations[enumCharsets[i]]
			for j, n := range names {
				s, err := decodeText(cs, n)
				if err != nil {
					return nil, err
				}
				names[j] = s
			}
		}
		return m, nil
	}
	var err error
	if m := t.EnumStrValueMap(); m != nil {
		if ct.enums, err = members(m); err != nil {
			return ct, err
		}
	}
	if m := t.SetStrValueMap(); m != nil {
		if ct.sets, err = members(m); err != nil {
			return ct, err
		}
	}
	if m := t.CollationMap(); m != nil {
		ct.charsets = make(map[int]string, len(m))
		for i, id := range m {
			cs, ok := in.collations[id]
			if !ok {
				return ct, fmt.Errorf("column %d is in collation %d, which the source does not list", i+1, id)
			}
			ct.charsets[i] = cs
		}
	}
	return ct, nil
}

// text returns value v of column i as the snapshot reads it.
func (ct *columnTypes) text(i int, v any) (any, error) {
	switch x := v.(type) {
	case int64:
		if names, ok := ct.enums[i]; ok {
			if x == 0 { // the empty string a non-strict source stores for a bad value
				return "", nil
			}
			if x < 0 || int(x) > len(names) {
				return nil, fmt.Errorf("column %d: ENUM index %d of %d members", i+1, x, len(names))
			}
			return names[x-1], nil
		}
		if names, ok := ct.sets[i]; ok {
			var on []string
			for b, n := range names {
				if uint64(x)>>b&1 == 1 {
					on = append(on, n)
				}
			}
			return strings.Join(on, ","), nil
		}
	case string:
		s, err := decodeText(ct.charsets[i], x)
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", i+1, err)
		}
		return s, nil
	case []byte:
		s, err := decodeText(ct.charsets[i], string(x))
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", i+1, err)
		}
		return s, nil
	}
	return v, nil
}

// decodeText converts s from the source's character set charset to UTF-8.
func decodeText(charset, s string) (string, error) {
	switch charset {
	case "", "utf8mb4", "utf8mb3", "utf8", "ascii", "binary":
		return s, nil
	}
	enc, ok := encodings[charset]
	if !ok {
		return "", fmt.Errorf("character set %s is not one the ingester converts to UTF-8 (convert the column to utf8mb4)", charset)
	}
	out, err := enc.NewDecoder().String(s)
	if err != nil {
		return "", fmt.Errorf("a value in character set %s: %w", charset, err)
	}
	return out, nil
}

// encodings are the source's character sets by their MySQL names. MySQL's
// latin1 is Windows-1252, not ISO 8859-1.
var encodings = map[string]encoding.Encoding{
	"latin1":   charmap.Windows1252,
	"latin2":   charmap.ISO8859_2,
	"latin5":   charmap.ISO8859_9,
	"latin7":   charmap.ISO8859_13,
	"greek":    charmap.ISO8859_7,
	"hebrew":   charmap.ISO8859_8,
	"cp1250":   charmap.Windows1250,
	"cp1251":   charmap.Windows1251,
	"cp1256":   charmap.Windows1256,
	"cp1257":   charmap.Windows1257,
	"cp850":    charmap.CodePage850,
	"cp852":    charmap.CodePage852,
	"cp866":    charmap.CodePage866,
	"koi8r":    charmap.KOI8R,
	"koi8u":    charmap.KOI8U,
	"macroman": charmap.Macintosh,
	"ucs2":     unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM),
	"utf16":    unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM),
	"utf16le":  unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM),
	"utf32":    utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM),
	"sjis":     japanese.ShiftJIS,
	"cp932":    japanese.ShiftJIS,
	"ujis":     japanese.EUCJP,
	"eucjpms":  japanese.EUCJP,
	"euckr":    korean.EUCKR,
	"gbk":      simplifiedchinese.GBK,
	"gb2312":   simplifiedchinese.GBK,
	"gb18030":  simplifiedchinese.GB18030,
	"big5":     traditionalchinese.Big5,
}

// parseMembers returns the members of an ENUM or SET column from its
// information_schema COLUMN_TYPE, enum('a','b') (a quote in a member is
// doubled), or nil for another type.
func parseMembers(columnType string) (kind string, members []string) {
	lower := strings.ToLower(columnType)
	for _, k := range []string{"enum", "set"} {
		if strings.HasPrefix(lower, k+"(") {
			kind = k
			break
		}
	}
	if kind == "" {
		return "", nil
	}
	s := columnType[len(kind)+1:]
	for {
		if len(s) == 0 || s[0] != '\'' {
			return kind, members
		}
		var b strings.Builder
		i := 1
		for ; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				break
			}
			b.WriteByte(s[i])
		}
		members = append(members, b.String())
		if i+1 >= len(s) || s[i+1] != ',' {
			return kind, members
		}
		s = s[i+2:]
	}
}
