package ingest

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
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
// string's bytes in its column's character set, an integer's bits (which
// go-mysql decodes signed), a FLOAT's or DOUBLE's binary value. Without
// this a colour ENUM arrives as "3", a latin1 title as bytes allot refuses
// as invalid UTF-8 and a TINYINT UNSIGNED 255 as -1. All maps are keyed by
// column ordinal (0-based).
//
// The rendering of each type, the same from both paths (the snapshot's
// text is the server's, MariaDB 10.11's, except for BIT):
//
//   - integers in decimal, UNSIGNED ones unsigned;
//   - BIT(n) as its unsigned decimal value (the server sends its raw bytes,
//     which a record cannot hold);
//   - DOUBLE as the shortest decimal that reads back as the same double,
//     FLOAT to 6 significant digits, FLOAT(M,D) and DOUBLE(M,D) with D
//     decimals, as the server prints them (gcvt, fcvt: "0.1", "1e21",
//     "16777200", "2.50"); the snapshot reads them CAST AS CHAR, as the
//     driver would otherwise parse them and print them its own way
//     ("1e+21", "1.67772e+07", "2.5");
//   - DECIMAL, DATE, DATETIME with their declared digits as the server
//     prints them; TIME(n) with its n fractional digits, zeros included;
//   - TIMESTAMP in the session time zone of the ingester's connection
//     (Ingester.readTimeZone; go-mysql is told it).
type columnTypes struct {
	enums    map[int][]string // ENUM members; the binary log holds index+1
	sets     map[int][]string // SET members; bit i is member i
	charsets map[int]string   // character set of a character column
	unsigned map[int]bool     // an integer column declared UNSIGNED
	scales   map[int]int      // a FLOAT(M,D) or DOUBLE(M,D) column's D
	fixed    map[int]string   // a MariaDB UUID, INET6 or INET4 column: its type (fixedTypes)
	// undecodable: an ENUM or SET column whose members are in a character
	// set the ingester does not convert, with that error.
	undecodable map[int]error
	// tables are the source's own conversions of single-byte character
	// sets (Ingester.readCharsetTables), by name; nil: Go's.
	tables map[string]*charsetTable
	// The column types (mysql.MYSQL_TYPE_*) and their metadata as the
	// table map gives them; nil for the types read at start.
	kinds []byte
	meta  []uint16
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
		ct = columnTypes{tables: in.startTypes.tables}
	}
	enumCharsets := t.EnumSetCollationMap()
	// Members the ingester cannot convert fail the column's values, not
	// the table map: a column no record maps is never read.
	members := func(m map[int][]string) map[int][]string {
		for i, names := range m {
			cs := in.collations[enumCharsets[i]]
			for j, n := range names {
				s, err := decodeText(ct.tables, cs, n)
				if err != nil {
					if ct.undecodable == nil {
						ct.undecodable = map[int]error{}
					}
					ct.undecodable[i] = err
					break
				}
				names[j] = s
			}
		}
		return m
	}
	if m := t.EnumStrValueMap(); m != nil {
		ct.enums = members(m)
	}
	if m := t.SetStrValueMap(); m != nil {
		ct.sets = members(m)
	}
	ct.kinds, ct.meta = t.ColumnType, t.ColumnMeta
	if m := t.UnsignedMap(); len(m) > 0 {
		ct.unsigned = m
	} else if names := t.ColumnNameString(); len(names) > 0 {
		// Column names but no signedness (a source that writes one and
		// not the other): by name from what was read at start.
		ct.unsigned = map[int]bool{}
		for i, n := range names {
			if in.byName[strings.ToLower(n)].unsigned {
				ct.unsigned[i] = true
			}
		}
	} // else (no optional metadata at all) by ordinal, from the start
	if names := t.ColumnNameString(); len(names) > 0 {
		// No table map carries a FLOAT's or DOUBLE's declared decimals:
		// by name from what was read at start (an ALTER that changes them
		// is seen at the next start).
		ct.scales, ct.fixed = map[int]int{}, map[int]string{}
		for i, n := range names {
			if info, ok := in.byName[strings.ToLower(n)]; ok && info.scale >= 0 {
				ct.scales[i] = info.scale
			}
			if f := in.byName[strings.ToLower(n)].fixed; f != "" {
				ct.fixed[i] = f
			}
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
	if err := ct.undecodable[i]; err != nil {
		return nil, fmt.Errorf("column %d: %w", i+1, err)
	}
	var kind byte
	if i < len(ct.kinds) {
		kind = ct.kinds[i]
	}
	switch x := v.(type) {
	case int8:
		if ct.unsigned[i] {
			return uint64(uint8(x)), nil
		}
	case int16:
		if ct.unsigned[i] {
			return uint64(uint16(x)), nil
		}
	case int32:
		if ct.unsigned[i] {
			if kind == mysql.MYSQL_TYPE_INT24 { // 24 bits, sign-extended
				return uint64(uint32(x) & 0xFFFFFF), nil
			}
			return uint64(uint32(x)), nil
		}
	case float32:
		if d, ok := ct.scales[i]; ok {
			return fcvt(float64(x), d), nil
		}
		return gcvt(float64(x), floatDigits), nil
	case float64:
		if d, ok := ct.scales[i]; ok {
			return fcvt(x, d), nil
		}
		return gcvt(x, doubleDigits), nil
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
		if kind == mysql.MYSQL_TYPE_BIT || ct.unsigned[i] {
			return uint64(x), nil
		}
	case string:
		if s, ok := ct.fixedText(i, x); ok {
			return s, nil
		}
		if kind == mysql.MYSQL_TYPE_TIME2 && i < len(ct.meta) && ct.meta[i] > 0 && !strings.Contains(x, ".") {
			// go-mysql leaves out a zero fraction ("00:00:00" for a
			// TIME(2) the server prints as "00:00:00.00").
			x += "." + strings.Repeat("0", int(ct.meta[i]))
		}
		s, err := decodeText(ct.tables, ct.charsets[i], x)
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", i+1, err)
		}
		return s, nil
	case []byte:
		if s, ok := ct.fixedText(i, string(x)); ok {
			return s, nil
		}
		s, err := decodeText(ct.tables, ct.charsets[i], string(x))
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", i+1, err)
		}
		return s, nil
	}
	return v, nil
}

// The significant digits the server prints of a FLOAT (FLT_DIG) and of a
// DOUBLE (as many as it takes to read back as the same double, at most 17).
const (
	floatDigits  = 6
	doubleDigits = 17
)

// gcvt renders x as MariaDB prints a FLOAT or DOUBLE without declared
// decimals (strings/dtoa.c my_gcvt, in the wide fields the server prints
// them in; checked against MariaDB 10.11 on random values): the shortest digits that read back as x if there are at
// most digits of them, else x rounded to digits significant digits; in the
// 'f' form while the decimal exponent is from -14 to 15 ("0.1", "1234567",
// "16777200", "0.0000001"), else in the 'e' form with no "+" and no
// leading zero in the exponent ("1e21", "1.2345678901234568e17",
// "1.26117e-44").
func gcvt(x float64, digits int) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return "0" // what the server prints, flagging an error
	}
	var b strings.Builder
	if math.Signbit(x) {
		b.WriteByte('-')
	}
	e := strconv.FormatFloat(math.Abs(x), 'e', -1, 64) // d.ddde±XX
	if mantissa, _, _ := strings.Cut(e, "e"); len(mantissa) > digits+1 {
		e = strconv.FormatFloat(math.Abs(x), 'e', digits-1, 64)
	}
	mantissa, exp, _ := strings.Cut(e, "e")
	ds := strings.TrimRight(strings.Replace(mantissa, ".", "", 1), "0")
	if ds == "" { // zero
		ds = "0"
	}
	n, _ := strconv.Atoi(exp)
	decpt := n + 1          // digits before the decimal point
	const maxDecptForF = 15 // DBL_DIG: MAX_DECPT_FOR_F_FORMAT
	if decpt >= -maxDecptForF+1 && (decpt <= maxDecptForF || len(ds) > decpt) {
		switch {
		case decpt <= 0:
			b.WriteString("0." + strings.Repeat("0", -decpt) + ds)
		case decpt < len(ds):
			b.WriteString(ds[:decpt] + "." + ds[decpt:])
		default:
			b.WriteString(ds + strings.Repeat("0", decpt-len(ds)))
		}
		return b.String()
	}
	b.WriteString(ds[:1])
	if len(ds) > 1 {
		b.WriteString("." + ds[1:])
	}
	b.WriteString("e" + strconv.Itoa(decpt-1))
	return b.String()
}

// fcvt renders x as the server prints a FLOAT(M,D) or DOUBLE(M,D)
// (strings/dtoa.c my_fcvt): with d decimals, the shortest digits that
// read back as x padded with zeros where they have fewer decimals, else x
// rounded to d decimals.
func fcvt(x float64, d int) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return "0"
	}
	s := strconv.FormatFloat(x, 'f', -1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > d {
		return strconv.FormatFloat(x, 'f', d, 64)
	}
	if d == 0 {
		return whole
	}
	return whole + "." + frac + strings.Repeat("0", d-len(frac))
}

// fixedTypes are MariaDB's data types of a fixed number of bytes that the
// server prints as text (UUID, INET6, INET4: the snapshot reads that
// text) and the binary log carries as the bytes, in their order, the
// trailing zero bytes left out (a fixed-length binary string's padding).
// Sent as those bytes, a UUID SKU, an INET6 attribute, was a row the
// catalog cannot hold.
var fixedTypes = map[string]int{"uuid": 16, "inet6": 16, "inet4": 4}

// fixedText renders column i's binary log value b as the server prints it
// when the column is of one of fixedTypes; ok is false otherwise.
func (ct *columnTypes) fixedText(i int, b string) (s string, ok bool) {
	f := ct.fixed[i]
	if f == "" || len(b) > fixedTypes[f] {
		return "", false
	}
	if i < len(ct.kinds) && ct.kinds[i] != mysql.MYSQL_TYPE_STRING {
		// The table map's type says otherwise: the column was altered
		// since the types were read at start (a UUID made a VARCHAR).
		return "", false
	}
	var raw [16]byte
	copy(raw[:], b)
	switch f {
	case "uuid": // 123e4567-e89b-12d3-a456-426614174000
		h := hex.EncodeToString(raw[:])
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
	case "inet4":
		return inet4Text(raw[:4]), true
	}
	return inet6Text(raw), true
}

func inet4Text(b []byte) string { return fmt.Sprintf("%d.%d.%d.%d", b[0], b[1], b[2], b[3]) }

// inet6Text prints an IPv6 address as MariaDB does (Inet6::to_string):
// lower-case words without leading zeros, the longest run of zero words
// (the first of equal ones, a single word too) as "::", and the last 32
// bits of an IPv4-compatible (::a.b.c.d) or IPv4-mapped (::ffff:a.b.c.d)
// address in dotted form.
func inet6Text(raw [16]byte) string {
	var w [8]uint16
	for i := range w {
		w[i] = uint16(raw[2*i])<<8 | uint16(raw[2*i+1])
	}
	gap, gapLen := -1, 0
	for i := 0; i < len(w); {
		if w[i] != 0 {
			i++
			continue
		}
		j := i
		for j < len(w) && w[j] == 0 {
			j++
		}
		if j-i > gapLen {
			gap, gapLen = i, j-i
		}
		i = j
	}
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		switch {
		case i == gap:
			if i == 0 {
				b.WriteByte(':')
			}
			b.WriteByte(':')
			i += gapLen - 1
		case i == 6 && gap == 0 && (gapLen == 6 || gapLen == 5 && w[5] == 0xffff):
			b.WriteString(inet4Text(raw[12:]))
			return b.String()
		default:
			fmt.Fprintf(&b, "%x", w[i])
			if i+1 != len(w) {
				b.WriteByte(':')
			}
		}
	}
	return b.String()
}

// bitText renders a BIT value the server sends as bytes (big-endian) as
// its unsigned decimal value, as the binary log's is rendered.
func bitText(b []byte) string {
	var v uint64 // BIT(64) at most
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return strconv.FormatUint(v, 10)
}

// columnInfo is what the ingester reads of a column at start, beside its
// ENUM or SET members and its character set.
type columnInfo struct {
	unsigned  bool   // an integer type declared UNSIGNED
	float     bool   // a FLOAT or DOUBLE
	scale     int    // a FLOAT(M,D)'s or DOUBLE(M,D)'s D; -1 for any other
	timestamp bool   // a TIMESTAMP
	fixed     string // a MariaDB UUID, INET6 or INET4 (fixedTypes)
}

// columnInfoOf reads an information_schema.COLUMNS row's COLUMN_TYPE
// ("int(10) unsigned zerofill", "double(12,4)"), DATA_TYPE and
// NUMERIC_SCALE.
func columnInfoOf(columnType, dataType string, scale sql.NullInt64) columnInfo {
	info := columnInfo{scale: -1}
	switch strings.ToLower(dataType) {
	case "tinyint", "smallint", "mediumint", "int", "bigint":
		info.unsigned = strings.Contains(strings.ToLower(columnType), " unsigned")
	case "float", "double":
		info.float = true
		// A plain FLOAT or DOUBLE has no scale (NULL): printed in %g form.
		if scale.Valid && strings.Contains(columnType, ",") {
			info.scale = int(scale.Int64)
		}
	case "timestamp":
		info.timestamp = true
	case "uuid", "inet6", "inet4":
		info.fixed = strings.ToLower(dataType)
	}
	return info
}

// decodeText converts s from the source's character set charset to UTF-8:
// by the source's own table of a single-byte character set when tables
// has it, else by Go's.
func decodeText(tables map[string]*charsetTable, charset, s string) (string, error) {
	switch charset {
	case "", "utf8mb4", "utf8mb3", "utf8", "ascii", "binary":
		return s, nil
	}
	if t := tables[charset]; t != nil {
		return t.decode(s), nil
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

// charsetTable is what the source converts the bytes 0x80..0xFF of a
// single-byte character set to (the bytes below are ASCII in each).
//
// The snapshot reads the server's conversion to UTF-8; the binary log
// carries the bytes, and Go's tables (encodings) differ from MariaDB's in
// places: latin1's 0x81, 0x8D, 0x8F, 0x90 and 0x9D are C1 controls to the
// server and U+FFFD to Go, ISO 8859's 0x80..0x9F too, greek's 0xA1 is
// U+02BD to the server and U+2018 to Go, koi8u's 0xAE U+255D and U+045E,
// cp1256's 0x8A '?' and U+0679 (about 200 bytes of 16 character sets, in
// MariaDB 10.11). Converted by Go's tables, one row read as two records,
// or as a record and a row the catalog cannot hold. So the ingester asks
// the source for each table at start (Ingester.readCharsetTables).
type charsetTable [128]rune

// readCharsetTables reads the source's table of each single-byte
// character set of encodings (charsetTable). One the source does not have,
// or does not answer for, is left to Go's table.
func (in *Ingester) readCharsetTables(ctx context.Context) {
	var high strings.Builder
	for c := 0x80; c <= 0xFF; c++ {
		fmt.Fprintf(&high, "%02x", c)
	}
	tables := map[string]*charsetTable{}
	for name, enc := range encodings {
		if _, single := enc.(*charmap.Charmap); !single {
			continue
		}
		var s sql.NullString
		err := in.db.QueryRowContext(ctx, "SELECT CONVERT(_"+name+" 0x"+high.String()+" USING utf8mb4)").Scan(&s)
		runes := []rune(s.String)
		if err == nil && (!s.Valid || len(runes) != len(charsetTable{})) {
			err = fmt.Errorf("%d characters for 128 bytes", len(runes))
		}
		if err != nil {
			// Said, not silent: a byte the two tables convert
			// differently may then read differently from the binary log.
			in.logf("could not read the source's table of %s (%v): its text from the binary log is converted by Go's", name, err)
			continue
		}
		t := new(charsetTable)
		copy(t[:], runes)
		tables[name] = t
	}
	in.startTypes.tables = tables
}

func (t *charsetTable) decode(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x80 {
			b.WriteByte(c)
		} else {
			b.WriteRune(t[c-0x80])
		}
	}
	return b.String()
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
