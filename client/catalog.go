package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"allot/catalog"
)

// The catalog commands (DESIGN.md, "Catalog and search"). A reply that is
// an error (-ERR for a record or query outside the contract, -MISMATCH for
// an idempotency key used with other arguments, -UNAVAILABLE) is returned
// as a *ServerError of its outcome class and leaves the connection
// usable, except a reply that refuses the connection itself ("-ERR max
// number of clients reached", "-ERR Protocol error": the server closes
// it after them), which is a refusal (ErrUnavailable: nothing was
// applied) and breaks the connection, as it does for Do; any other error
// breaks the connection, as Do's do. None is retried or redirected, on a
// Conn or a Client: one attempt, its error to the caller (Client.Do with
// inventory.Search is the retried search).

// CatalogSet sends CATALOG.SET for r, with ID key unless key is "".
func (cn *Conn) CatalogSet(ctx context.Context, r catalog.Record, key string) error {
	args := make([]string, 0, 4+2*len(r.Attributes)+2)
	args = append(args, "CATALOG.SET", r.SKU, r.Title, r.Brand)
	for _, a := range r.Attributes {
		args = append(args, a.Name, a.Value)
	}
	if key != "" {
		args = append(args, "ID", key)
	}
	return cn.simple(ctx, "CATALOG.SET", args, func(line []byte) error {
		if string(line) != "+OK" {
			return unexpected("CATALOG.SET", line)
		}
		return nil
	})
}

// CatalogDel sends CATALOG.DEL and reports whether a record was deleted.
func (cn *Conn) CatalogDel(ctx context.Context, sku, key string) (bool, error) {
	args := []string{"CATALOG.DEL", sku}
	if key != "" {
		args = append(args, "ID", key)
	}
	var deleted bool
	err := cn.simple(ctx, "CATALOG.DEL", args, func(line []byte) error {
		switch string(line) {
		case ":1":
			deleted = true
		case ":0":
		default:
			return unexpected("CATALOG.DEL", line)
		}
		return nil
	})
	return deleted, err
}

// CatalogGet sends CATALOG.GET; found is false for an unknown SKU.
func (cn *Conn) CatalogGet(ctx context.Context, sku string) (r catalog.Record, found bool, err error) {
	err = cn.simple(ctx, "CATALOG.GET", []string{"CATALOG.GET", sku}, func(line []byte) (err error) {
		if string(line) == "$-1" || string(line) == "*-1" {
			return nil
		}
		if n, ok := header(line, '*'); !ok || n != 3 {
			return unexpected("CATALOG.GET", line)
		}
		found, r.SKU = true, sku
		if r.Title, err = cn.bulkString("CATALOG.GET"); err != nil {
			return err
		}
		if r.Brand, err = cn.bulkString("CATALOG.GET"); err != nil {
			return err
		}
		line, err = cn.line()
		if err != nil {
			return err
		}
		n, ok := header(line, '*')
		if !ok || n < 0 || n%2 != 0 || n > 2*catalog.AttributesMax {
			return unexpected("CATALOG.GET", line)
		}
		for i := 0; i < n; i += 2 {
			var a catalog.Attribute
			if a.Name, err = cn.bulkString("CATALOG.GET"); err != nil {
				return err
			}
			if a.Value, err = cn.bulkString("CATALOG.GET"); err != nil {
				return err
			}
			r.Attributes = append(r.Attributes, a)
		}
		return nil
	})
	return r, found, err
}

// Search sends SEARCH for q and appends the results to out.
func (cn *Conn) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	if err := cn.begin(ctx); err != nil {
		return out, err
	}
	cn.out = appendSearch(cn.out[:0], q)
	if err := cn.flush(); err != nil {
		return out, cn.fail(ctx, err)
	}
	out, err := cn.readSearch(out)
	if err != nil {
		var se *ServerError
		if errors.As(err, &se) && !refusesConnection(se.Msg) {
			return out, err // an error reply: the connection stays usable
		}
		return out, cn.fail(ctx, err)
	}
	return out, nil
}

// SearchPipeline sends a SEARCH for each of qs in one write, then reads
// the replies in order: outs[i] gets qs[i]'s results (appended to
// outs[i][:0], so a caller that keeps outs between calls does not
// allocate for them). len(outs) must be at least len(qs). An error reply
// (a query outside the contract) leaves the connection usable and is
// returned, the first one, after every reply was read.
func (cn *Conn) SearchPipeline(ctx context.Context, qs []catalog.Query, outs [][]catalog.Result) error {
	if len(outs) < len(qs) {
		return fmt.Errorf("client: %d result slices for %d queries", len(outs), len(qs))
	}
	if err := cn.begin(ctx); err != nil {
		return err
	}
	cn.out = cn.out[:0]
	for _, q := range qs {
		cn.out = appendSearch(cn.out, q)
	}
	if err := cn.flush(); err != nil {
		return cn.fail(ctx, err)
	}
	var first error
	for i := range qs {
		var err error
		if outs[i], err = cn.readSearch(outs[i][:0]); err != nil {
			var se *ServerError
			if !errors.As(err, &se) {
				return cn.fail(ctx, err)
			}
			if refusesConnection(se.Msg) {
				// The server closed the connection after it: no reply
				// follows. First on it, it refused every query unread.
				return cn.fail(ctx, err)
			}
			if first == nil {
				first = fmt.Errorf("client: query %d of the pipeline: %w", i, err)
			}
		}
	}
	return first
}

// appendSearch appends q as a SEARCH command.
func appendSearch(b []byte, q catalog.Query) []byte {
	var argv [8]string
	var nums [2][20]byte
	args := append(argv[:0], "SEARCH", q.Prefix)
	if q.Brand != "" {
		args = append(args, "BRAND", q.Brand)
	}
	if q.Offset != 0 {
		args = append(args, "OFFSET", unsafeString(strconv.AppendInt(nums[0][:0], int64(q.Offset), 10)))
	}
	if q.Limit != 0 {
		args = append(args, "LIMIT", unsafeString(strconv.AppendInt(nums[1][:0], int64(q.Limit), 10)))
	}
	return appendCommand(b, args...)
}

// readSearch reads one SEARCH reply and appends its results to out; an
// error reply is a *ServerError of its class (replyError; the reply was
// read whole).
func (cn *Conn) readSearch(out []catalog.Result) ([]catalog.Result, error) {
	line, err := cn.line()
	if err != nil {
		return out, err
	}
	if len(line) > 0 && line[0] == '-' {
		return out, replyError(string(line[1:]))
	}
	return cn.readSearchFrom(line, out)
}

// readSearchFrom reads the rest of a SEARCH reply whose first line is
// line (not an error) and appends its results to out.
func (cn *Conn) readSearchFrom(line []byte, out []catalog.Result) ([]catalog.Result, error) {
	n, ok := header(line, '*')
	if !ok || n < 0 || n > catalog.LimitMax {
		return out, unexpected("SEARCH", line)
	}
	// Every result's SKU, title and brand are gathered into one buffer and
	// made strings with one allocation for the whole reply (instead of
	// three per result); spans holds each one's end.
	first := len(out)
	text, spans := cn.searchText[:0], cn.searchSpans[:0]
	for range n {
		line, err := cn.line()
		if err != nil {
			return out, err
		}
		if k, ok := header(line, '*'); !ok || k != 4 {
			return out, unexpected("SEARCH", line)
		}
		for range 3 {
			line, err := cn.line()
			if err != nil {
				return out, err
			}
			if len(line) == 0 || line[0] != '$' {
				return out, unexpected("SEARCH", line)
			}
			b, err := cn.bulk(line)
			if err != nil {
				return out, err
			}
			text = append(text, b...)
			spans = append(spans, len(text))
		}
		avail, err := cn.integer("SEARCH")
		if err != nil {
			return out, err
		}
		out = append(out, catalog.Result{Available: avail})
	}
	all, from := string(text), 0
	for i := range n {
		r := &out[first+i]
		r.SKU, from = all[from:spans[3*i]], spans[3*i]
		r.Title, from = all[from:spans[3*i+1]], spans[3*i+1]
		r.Brand, from = all[from:spans[3*i+2]], spans[3*i+2]
	}
	cn.searchText, cn.searchSpans = text[:0], spans[:0]
	return out, nil
}

// simple sends one command and reads its reply: an error reply becomes a
// *ServerError (the connection stays usable), anything else goes to read
// with the reply's first line.
func (cn *Conn) simple(ctx context.Context, cmd string, args []string, read func(line []byte) error) error {
	if err := cn.begin(ctx); err != nil {
		return err
	}
	cn.out = appendCommand(cn.out[:0], args...)
	if err := cn.flush(); err != nil {
		return cn.fail(ctx, err)
	}
	line, err := cn.line()
	if err != nil {
		return cn.fail(ctx, err)
	}
	if len(line) > 0 && line[0] == '-' {
		// A catalog write is journaled as any mutation: its -UNKNOWN and
		// -UNAVAILABLE keep their outcome class.
		se := replyError(string(line[1:]))
		if refusesConnection(se.Msg) {
			return cn.fail(ctx, se)
		}
		return se
	}
	if err := read(line); err != nil {
		return cn.fail(ctx, err)
	}
	return nil
}

func (cn *Conn) bulkString(cmd string) (string, error) {
	line, err := cn.line()
	if err != nil {
		return "", err
	}
	if len(line) == 0 || line[0] != '$' {
		return "", unexpected(cmd, line)
	}
	b, err := cn.bulk(line)
	return string(b), err
}

// CatalogSet runs Conn.CatalogSet on a pooled connection.
func (c *Client) CatalogSet(ctx context.Context, r catalog.Record, key string) error {
	return c.with(ctx, func(cn *Conn) error { return cn.CatalogSet(ctx, r, key) })
}

// CatalogDel runs Conn.CatalogDel on a pooled connection.
func (c *Client) CatalogDel(ctx context.Context, sku, key string) (deleted bool, err error) {
	err = c.with(ctx, func(cn *Conn) error {
		deleted, err = cn.CatalogDel(ctx, sku, key)
		return err
	})
	return deleted, err
}

// CatalogGet runs Conn.CatalogGet on a pooled connection.
func (c *Client) CatalogGet(ctx context.Context, sku string) (r catalog.Record, found bool, err error) {
	err = c.with(ctx, func(cn *Conn) error {
		r, found, err = cn.CatalogGet(ctx, sku)
		return err
	})
	return r, found, err
}

// Search runs Conn.Search on a pooled connection.
func (c *Client) Search(ctx context.Context, q catalog.Query, out []catalog.Result) (res []catalog.Result, err error) {
	err = c.with(ctx, func(cn *Conn) error {
		res, err = cn.Search(ctx, q, out)
		return err
	})
	return res, err
}

// CatalogSetPipeline sends CATALOG.SET for every record in one write (no
// keys) and reads the replies. When any reply is an error, it returns a
// *CatalogSetError, after every reply was read (the connection stays
// usable): every error reply with its record, and the worst class among
// them (see CatalogSetError). Not retried, nor redirected.
func (cn *Conn) CatalogSetPipeline(ctx context.Context, recs []catalog.Record) error {
	if err := cn.begin(ctx); err != nil {
		return err
	}
	cn.out = cn.out[:0]
	var args []string
	for i := range recs {
		r := &recs[i]
		args = append(args[:0], "CATALOG.SET", r.SKU, r.Title, r.Brand)
		for _, a := range r.Attributes {
			args = append(args, a.Name, a.Value)
		}
		cn.out = appendCommand(cn.out, args...)
	}
	if err := cn.flush(); err != nil {
		return cn.fail(ctx, err)
	}
	var failed *CatalogSetError
	for i := range recs {
		line, err := cn.line()
		if err != nil {
			return cn.fail(ctx, err)
		}
		switch {
		case i == 0 && len(line) > 0 && line[0] == '-' && refusesConnection(string(line[1:])):
			// The server refused the connection and closed it: it read
			// no record of the pipeline. A refusal of them all, not one
			// record's reply among others applied (CatalogSetError).
			return cn.fail(ctx, replyError(string(line[1:])))
		case len(line) > 0 && line[0] == '-':
			if failed == nil {
				failed = &CatalogSetError{Records: len(recs)}
			}
			failed.Replies = append(failed.Replies, RecordError{Index: i, SKU: recs[i].SKU, Err: replyError(string(line[1:]))})
		case string(line) != "+OK":
			return cn.fail(ctx, unexpected("CATALOG.SET", line))
		}
	}
	if failed != nil {
		return failed
	}
	return nil
}

// CatalogSetError is the error of a pipeline of catalog sets
// (Conn.CatalogSetPipeline) whose server answered one or more records
// with an error reply; the records not in Replies were applied.
//
// Its class, matched with errors.Is, is the worst among the replies, so
// that a plain -ERR first does not hide a later -UNKNOWN: ErrOutcomeUnknown
// when one reply is -UNKNOWN or, in a pipeline of several records, any
// refusal (-UNAVAILABLE): the other records were answered on their own
// and some may be applied, so sending them all again is not a retry of a
// refused request (Conn.Pipeline's rule). A pipeline of one record has
// that record's reply's class (errors.As finds its *ServerError, and
// PrimaryOf sees a standby's refusal through it). Error replies of no
// class only (-ERR, -MISMATCH) leave it of none; errors.As finds the
// first one's *ServerError.
type CatalogSetError struct {
	Records int           // the records of the pipeline
	Replies []RecordError // every error reply, in record order
}

// RecordError is the error reply to one record of a pipeline.
type RecordError struct {
	Index int    // the record's place in the pipeline, from 0
	SKU   string // the record's SKU
	Err   *ServerError
}

// catalogErrorsShown bounds the replies a CatalogSetError's message lists.
const catalogErrorsShown = 4

func (e *CatalogSetError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "client: %d of a pipeline of %d catalog records failed: ", len(e.Replies), e.Records)
	for i, r := range e.Replies {
		if i == catalogErrorsShown {
			fmt.Fprintf(&b, "; and %d more", len(e.Replies)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "record %d (sku %s): %s", r.Index+1, strconv.Quote(r.SKU), r.Err.Msg)
	}
	if e.unknown() {
		b.WriteString(": " + ErrOutcomeUnknown.Error())
	} else if c := e.Replies[0].Err.class; c != nil {
		b.WriteString(": " + c.Error())
	}
	return b.String()
}

// Unwrap returns ErrOutcomeUnknown when the pipeline's outcome is
// unknown, else the first error reply (a refusal's class with it, in a
// pipeline of one).
func (e *CatalogSetError) Unwrap() error {
	if e.unknown() {
		return ErrOutcomeUnknown
	}
	return e.Replies[0].Err
}

// unknown reports whether the pipeline's outcome is unknown: a reply
// said so, or a record of several was refused.
func (e *CatalogSetError) unknown() bool {
	for _, r := range e.Replies {
		switch r.Err.class {
		case ErrOutcomeUnknown:
			return true
		case ErrUnavailable:
			if e.Records > 1 {
				return true
			}
		}
	}
	return false
}

// unsafeString views b as a string without a copy, for an argument that is
// written out before b changes.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
