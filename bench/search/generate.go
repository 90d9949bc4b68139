package search

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode"
	"unicode/utf8"

	"allot/catalog"
	"allot/inventory"
)

// Params determine a workload: same params, same records and queries.
type Params struct {
	Records int
	Queries int
	Seed    uint64
	// BrandShare is the share of queries that carry a brand prefix.
	BrandShare float64
}

// Defaults and bounds.
const (
	RecordsDefault = 1_000_000
	RecordsMax     = 10_000_000
	QueriesDefault = 200_000
	QueriesMax     = 100_000_000
	// BrandShareDefault: most typed searches are a title prefix alone.
	BrandShareDefault = 0.2
	// OffsetMaxQueries is the largest offset a query asks for.
	OffsetMaxQueries = 100
)

// Validate checks the parameters.
func (p *Params) Validate() error {
	if p.Records < 1 || p.Records > RecordsMax {
		return fmt.Errorf("search: records must be from 1 to %d, got %d", RecordsMax, p.Records)
	}
	if p.Queries < 1 || p.Queries > QueriesMax {
		return fmt.Errorf("search: queries (--ops) must be from 1 to %d, got %d", QueriesMax, p.Queries)
	}
	if !(p.BrandShare >= 0 && p.BrandShare <= 1) { // NaN too
		return fmt.Errorf("search: --brand-share must be from 0 to 1, got %g", p.BrandShare)
	}
	return nil
}

// Workload is a generated catalog, its stock rows and the queries.
type Workload struct {
	Params  Params
	Records []catalog.Record
	Rows    []inventory.Row
	Queries []catalog.Query
}

// vocabulary: product words, English interleaved with words of other
// languages (many with letters outside ASCII, some whose case folding is
// not the obvious one: ſ, K (Kelvin), ẞ, İ, ı, Σ/ς). Its order is the Zipf
// rank: the first words are the most frequent.
var vocabulary = interleave(strings.Fields(`
	shirt jacket coat shoe boot dress bag watch ring lamp chair table sofa bed pillow
	blanket towel mug cup plate knife spoon fork pan pot kettle phone cable charger case
	cover screen mouse keyboard speaker headphones camera lens tripod battery bottle
	backpack wallet belt scarf hat cap glove sock sweater hoodie jeans skirt shorts
	sandal sneaker slipper umbrella mirror frame candle vase clock shelf drawer rug
	cushion curtain basket box jar bowl tray grinder blender toaster heater fan
	classic premium organic vintage modern compact wireless portable waterproof
	leather cotton wool linen silk steel wooden glass ceramic bamboo black white red
	blue green grey navy olive beige pink yellow orange purple brown gold silver
	small medium large extra slim wide long short soft warm light heavy 100% eco_line`), strings.Fields(`
	Über Größe Mantel Jacke Schuh Stiefel Tasche Uhr Lampe Stuhl Tisch Kissen Decke
	Handtuch Becher Teller Messer Löffel Gabel Pfanne Topf Wasserkocher Kühlschrank
	Größenverstellbar Überzug Ärmel Öl Straße weiß grün blau rot schwarz STRAẞE
	été café crème élégant château écharpe chaussure bouteille lumière fenêtre
	señora niño camiseta pantalón zapato mochila cuchara cazuela año Ñandú
	łyżka żółty źródło ściana ćma książka torba buty kurtka Łódź
	čepice šála žlutý řemen ďábel ťuk Čaj
	σακάκι παπούτσι τσάντα ρολόι λάμπα καρέκλα ΣΑΜΠΟΥΆΝ ωραίος Ωμέγα
	пальто куртка сапоги сумка часы лампа стул стол подушка одеяло Шапка
	İstanbul ılık çanta ayakkabı şapka gömlek Işık
	ſtyle Kelvin ÅNGSTRÖM Øre Ærø`))

func interleave(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for i := 0; i < max(len(a), len(b)); i++ {
		if i < len(a) {
			out = append(out, a[i])
		}
		if i < len(b) {
			out = append(out, b[i])
		}
	}
	return out
}

var syllables = strings.Fields("ka ro mi ta lu ve no sa zen tek pro max ul tra fle xo bri qu dor ax el io mar tin bel")

// Generate makes the workload of p.
func Generate(p Params) (*Workload, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(p.Seed, 0x5ea7c4))
	words := rand.NewZipf(rng, 1.07, 3, uint64(len(vocabulary)-1))
	brands := makeBrands(rng, 500)
	brandZipf := rand.NewZipf(rng, 1.2, 2, uint64(len(brands)-1))
	w := &Workload{Params: p, Records: make([]catalog.Record, 0, p.Records)}
	var b strings.Builder
	for i := range p.Records {
		b.Reset()
		n := 2 + rng.IntN(5)
		for j := range n {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(caseOf(rng, vocabulary[words.Uint64()]))
		}
		if rng.IntN(4) == 0 {
			fmt.Fprintf(&b, " %d", 1+rng.IntN(999))
		}
		sku := fmt.Sprintf("SKU%07d", i)
		r := catalog.Record{SKU: sku, Title: truncate(b.String(), catalog.TextBytesMax), Brand: brands[brandZipf.Uint64()]}
		if rng.IntN(3) == 0 {
			r.Attributes = []catalog.Attribute{{Name: "colour", Value: vocabulary[rng.IntN(len(vocabulary))]}}
		}
		w.Records = append(w.Records, r)
		if rng.IntN(5) != 0 {
			for k := range 1 + rng.IntN(2) {
				w.Rows = append(w.Rows, inventory.Row{
					Key:   inventory.RowKey{SKU: sku, Warehouse: fmt.Sprintf("w%d", k+1), Condition: "new", Source: "own"},
					Count: int64(rng.IntN(21)), Price: int64(100 + rng.IntN(9900)),
				})
			}
		}
	}
	w.Queries = make([]catalog.Query, p.Queries)
	for i := range w.Queries {
		r := &w.Records[rng.IntN(len(w.Records))]
		q := catalog.Query{Prefix: prefixOf(rng, r.Title, 1+rng.IntN(4)), Offset: rng.IntN(OffsetMaxQueries + 1), Limit: 10}
		if rng.IntN(2) == 0 {
			q.Limit = 20
		}
		if rng.Float64() < p.BrandShare {
			q.Brand = prefixOf(rng, r.Brand, 1+rng.IntN(2))
		}
		w.Queries[i] = q
	}
	return w, nil
}

func makeBrands(rng *rand.Rand, n int) []string {
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 2 + rng.IntN(2) {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
		s := b.String()
		switch rng.IntN(4) {
		case 0:
			s = strings.ToUpper(s)
		case 1, 2:
			s = strings.ToUpper(s[:1]) + s[1:]
		}
		if rng.IntN(10) == 0 {
			s += " & Söhne"
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// caseOf writes a word capitalized (half the time), lower case, upper
// case, or as the vocabulary has it.
func caseOf(rng *rand.Rand, w string) string {
	switch rng.IntN(8) {
	case 0, 1, 2, 3:
		r, n := utf8.DecodeRuneInString(w)
		return string(unicode.ToUpper(r)) + w[n:]
	case 4, 5:
		return strings.ToLower(w)
	case 6:
		return strings.ToUpper(w)
	}
	return w
}

// prefixOf returns the first n runes of s (fewer if s is shorter), each
// rune's case flipped at random.
func prefixOf(rng *rand.Rand, s string, n int) string {
	var b strings.Builder
	for _, r := range s {
		if n == 0 {
			break
		}
		n--
		switch rng.IntN(3) {
		case 0:
			r = unicode.ToUpper(r)
		case 1:
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func truncate(s string, n int) string {
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}
