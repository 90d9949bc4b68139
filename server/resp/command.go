package resp

import (
	"allot/inventory"
)

// Name identifies a command of the wire contract.
type Name uint8

const (
	NameUnknown Name = iota
	NameCapture
	NameRelease
	NameStockSet
	NameStockGet
	NameAvailable
	NamePing
	NameQuit
	NameHello
	NameClient
	NameCommand
	NameAuth
	NameEcho
	NameHold
	NameConfirm
	NameCancel
	NameHoldGet
	NameOrder
	NameChanges
	NameCatalogSet
	NameCatalogGet
	NameCatalogDel
	NameSearch
)

// spec is one row of the command table.
type spec struct {
	name  Name
	word  string // upper case, as in the contract
	arity int    // exact number of arguments, the name included; 0 = checked by the server or the op's decoder
	usage string
	kind  inventory.Kind // for op commands; 0 otherwise
	// keyed: the command takes a trailing "ID <key>" (two more arguments).
	keyed bool
}

var specs = [...]spec{
	{NameCapture, "CAPTURE", 5, "CAPTURE <sku> <condition> <source> <n> [ID <key>]", inventory.KindCapture, true},
	{NameRelease, "RELEASE", 6, "RELEASE <sku> <warehouse> <condition> <source> <n> [ID <key>]", inventory.KindRelease, true},
	{NameStockSet, "STOCK.SET", 7, "STOCK.SET <sku> <warehouse> <condition> <source> <count> <price> [ID <key>]", inventory.KindStock, true},
	{NameStockGet, "STOCK.GET", 5, "STOCK.GET <sku> <warehouse> <condition> <source>", inventory.KindGet, false},
	{NameAvailable, "AVAILABLE", 4, "AVAILABLE <sku> <condition> <source>", inventory.KindAvailable, false},
	{NameHold, "HOLD", 0, "HOLD <hold> <ttl-ms> <sku> <condition> <source> <n> [<sku> <condition> <source> <n> ...]", inventory.KindHold, false},
	{NameConfirm, "CONFIRM", 2, "CONFIRM <hold>", inventory.KindConfirm, false},
	{NameCancel, "CANCEL", 2, "CANCEL <hold>", inventory.KindCancel, false},
	{NameHoldGet, "HOLD.GET", 2, "HOLD.GET <hold>", inventory.KindHoldGet, false},
	{NameOrder, "ORDER", 0, "ORDER <sku> <condition> <source> <n> [<sku> <condition> <source> <n> ...] [ID <key>]", inventory.KindOrder, true},
	{NamePing, "PING", 0, "PING [message]", 0, false},
	{NameQuit, "QUIT", 0, "QUIT", 0, false},
	{NameHello, "HELLO", 0, "HELLO [2 [AUTH <user> <password>] [SETNAME <name>]]", 0, false},
	{NameClient, "CLIENT", 0, "CLIENT SETNAME <name> | GETNAME | SETINFO <attr> <value> | ID", 0, false},
	{NameCommand, "COMMAND", 0, "COMMAND [...]", 0, false},
	{NameAuth, "AUTH", 0, "AUTH [<user>] <password>", 0, false},
	// redis-cli --pipe ends a bulk load with ECHO <marker> and waits for it.
	{NameEcho, "ECHO", 2, "ECHO <message>", 0, false},
	{NameChanges, "CHANGES", 0, "CHANGES <after-seq> [COUNT n] [BLOCK ms]", 0, false},
	{NameCatalogSet, "CATALOG.SET", 0, "CATALOG.SET <sku> <title> <brand> [<attr> <value> ...] [ID <key>]", inventory.KindCatalogSet, true},
	{NameCatalogGet, "CATALOG.GET", 0, "CATALOG.GET <sku>", inventory.KindCatalogGet, false},
	{NameCatalogDel, "CATALOG.DEL", 0, "CATALOG.DEL <sku> [ID <key>]", inventory.KindCatalogDel, true},
	{NameSearch, "SEARCH", 0, "SEARCH <prefix> [BRAND <prefix>] [OFFSET <o>] [LIMIT <l>]", inventory.KindSearch, false},
}

// Words returns every command word, in table order: what the
// unknown-command error lists.
func Words() []string {
	out := make([]string, len(specs))
	for i := range specs {
		out[i] = specs[i].word
	}
	return out
}

// Lookup returns the command named by word, ignoring ASCII case. It does
// not allocate.
func Lookup(word []byte) Name {
	for i := range specs {
		if equalFold(word, specs[i].word) {
			return specs[i].name
		}
	}
	return NameUnknown
}

func (n Name) spec() *spec {
	for i := range specs {
		if specs[i].name == n {
			return &specs[i]
		}
	}
	return nil
}

// Kind returns the op kind of an op command, or 0 for the others.
func (n Name) Kind() inventory.Kind {
	if s := n.spec(); s != nil {
		return s.kind
	}
	return 0
}

// String returns the command's word in lower case, as Redis names commands
// in its errors and as metrics label them.
func (n Name) String() string {
	s := n.spec()
	if s == nil {
		return "unknown"
	}
	b := []byte(s.word)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Usage returns the command's syntax, for error messages.
func (n Name) Usage() string {
	if s := n.spec(); s != nil {
		return s.usage
	}
	return ""
}

// equalFold reports whether b equals upper (upper case: no byte of it is
// a lower-case letter) ignoring ASCII case. A byte is folded only when it
// differs: clients send commands in upper case, as the contract spells
// them.
func equalFold(b []byte, upper string) bool {
	if len(b) != len(upper) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == upper[i] {
			continue
		}
		if c < 'a' || c > 'z' || c-('a'-'A') != upper[i] {
			return false
		}
	}
	return true
}

// EqualFold reports whether b equals word (upper case) ignoring ASCII case.
func EqualFold(b []byte, word string) bool { return equalFold(b, word) }

// Interner turns argument bytes into strings. The server gives each
// connection one that returns the same string for the same bytes, so that
// the ids of a hot SKU are not allocated on every command.
type Interner interface {
	Intern(b []byte) string
	// InternID is Intern for what should be an identifier; valid reports
	// that the string passes inventory.CheckID. An interner that checked
	// a string when it first saw it answers without checking it again.
	InternID(b []byte) (s string, valid bool)
}

// ArityError returns the message for a command given the wrong number of
// arguments.
func ArityError(n Name) string {
	return "wrong number of arguments for '" + n.String() + "' command (" + n.Usage() + ")"
}

// DecodeOp decodes the arguments of an op command (args[0] is the name) into
// op. It returns "" on success, else what was wrong; op is then not usable.
// It checks the arity, that numbers are integers, and every rule of
// inventory.Op.Check, so that a malformed command never reaches the engine.
func DecodeOp(name Name, args [][]byte, in Interner, op *inventory.Op) string {
	s := name.spec()
	if s == nil || s.kind == 0 {
		return "not an op command"
	}
	// Keep the lines' buffer whatever the kind: a connection's requests
	// alternate HOLD and CONFIRM, and dropping it would allocate anew for
	// every HOLD.
	lines := op.Lines[:0]
	query := op.Query // a search keeps its query the same way
	*op = inventory.Op{Kind: s.kind, Lines: lines}
	if isCatalogKind(s.kind) {
		return decodeCatalogOp(s, args, in, op, query)
	}
	if s.arity == 0 {
		return decodeLinesOp(s, args, in, op, lines)
	}
	if s.keyed && len(args) == s.arity+2 {
		if !EqualFold(args[s.arity], "ID") {
			return "syntax error: expected ID <key> after the arguments, got '" + string(printableWord(args[s.arity])) + "'"
		}
		op.IdempotencyKey = string(args[s.arity+1])
		if op.IdempotencyKey == "" {
			return "idempotency key is empty"
		}
		args = args[:s.arity]
	} else if len(args) != s.arity {
		return ArityError(name)
	}
	validKey := false
	switch s.kind {
	case inventory.KindConfirm, inventory.KindCancel, inventory.KindHoldGet:
		// Hold ids are one per cart: interning them would fill the
		// connection's table and stop it interning the SKUs.
		op.Hold = string(args[1])
		return op.Check()
	case inventory.KindCapture, inventory.KindAvailable:
		var skuOK, conditionOK, sourceOK bool
		op.Key.SKU, skuOK = in.InternID(args[1])
		op.Key.Condition, conditionOK = in.InternID(args[2])
		op.Key.Source, sourceOK = in.InternID(args[3])
		validKey = skuOK && conditionOK && sourceOK
		if s.kind == inventory.KindCapture {
			n, ok := ParseInt(args[4])
			if !ok {
				return inventory.CheckQuantity(0)
			}
			op.N = n
		}
	default:
		var skuOK, warehouseOK, conditionOK, sourceOK bool
		op.Key.SKU, skuOK = in.InternID(args[1])
		op.Key.Warehouse, warehouseOK = in.InternID(args[2])
		op.Key.Condition, conditionOK = in.InternID(args[3])
		op.Key.Source, sourceOK = in.InternID(args[4])
		validKey = skuOK && warehouseOK && conditionOK && sourceOK
		switch s.kind {
		case inventory.KindRelease:
			n, ok := ParseInt(args[5])
			if !ok {
				return inventory.CheckQuantity(0)
			}
			op.N = n
		case inventory.KindStock:
			count, ok := ParseInt(args[5])
			if !ok {
				return inventory.CheckCount(-1)
			}
			price, ok := ParseInt(args[6])
			if !ok {
				return inventory.CheckPrice(-1)
			}
			op.N, op.Price = count, price
		}
	}
	if validKey {
		// The interner knew every identifier of the key valid: check the
		// rest, with the same result as Check.
		return op.CheckValidKey()
	}
	return op.Check()
}

// ParseInt parses a decimal int64: an optional '-' and 1..19 digits, nothing
// else (no '+', no spaces, no fraction). It reports false on anything else
// or on overflow. It does not allocate.
func ParseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// StringInterner is an Interner with a bounded table: once it holds
// entriesMax strings it allocates new ones without remembering them, so a
// client sending endless distinct ids cannot grow it without bound. It
// remembers valid identifiers only (inventory.CheckID), each checked once,
// when first seen: a string it remembers is known valid, and InternID
// answers so without checking it again (the op's check of the identifiers
// was 7% of the server's instructions per CAPTURE).
type StringInterner struct {
	table      map[string]string
	entriesMax int
	// recent is a direct-mapped cache in front of table, slotted by a
	// string's length and end bytes: a connection repeats the same few
	// SKUs, conditions and sources, and a compare of a few bytes is
	// cheaper than hashing them for the map (which was 7% of the server's
	// CPU per CAPTURE).
	recent [recentSlots]string
}

const recentSlots = 16

// NewStringInterner returns an interner remembering up to entriesMax
// strings, each a valid identifier (so at most inventory.IDBytesMax bytes
// long): an invalid one is refused by the op's check, and remembering a
// longer one would let one connection pin entriesMax times a command's
// length of memory.
func NewStringInterner(entriesMax int) *StringInterner {
	return &StringInterner{table: make(map[string]string), entriesMax: entriesMax}
}

// Intern returns a string equal to b.
func (t *StringInterner) Intern(b []byte) string {
	s, _ := t.InternID(b)
	return s
}

// InternID returns a string equal to b, and whether it is a valid
// identifier.
func (t *StringInterner) InternID(b []byte) (string, bool) {
	if len(b) == 0 {
		return "", false
	}
	slot := &t.recent[(uint(len(b))*7+uint(b[0])+uint(b[len(b)-1]))%recentSlots]
	if *slot == string(b) {
		return *slot, true
	}
	if s, ok := t.table[string(b)]; ok {
		*slot = s
		return s, true
	}
	s := string(b)
	if inventory.CheckID(s) != "" {
		return s, false
	}
	if len(t.table) < t.entriesMax {
		t.table[s] = s
		*slot = s
	}
	return s, true
}
