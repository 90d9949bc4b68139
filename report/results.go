package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"allot/bench"
)

// ErrNotResults says the input is JSON but not an allot results file.
var ErrNotResults = errors.New("report: not an allot results file")

// ResultsBytesMax bounds a results file. The largest committed one (a
// sweep of every store) is under 300 KB; a file this size is a wrong path
// (a log, a disk image, a device), and reading it whole to find out would
// take the machine's memory.
const ResultsBytesMax = 256 << 20

// ReadResultsFile reads and checks a results file written by
// `allot bench --out`. Errors name the file and say what is wrong with it.
func ReadResultsFile(path string) (*bench.ResultsFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("report: cannot read results file: %w", err)
	}
	defer fh.Close()
	if st, err := fh.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > ResultsBytesMax {
		return nil, fmt.Errorf("%s: %w: it is %d bytes, larger than the %d a results file may be", path, ErrNotResults, st.Size(), ResultsBytesMax)
	}
	f, err := DecodeResults(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// DecodeResults decodes a results file and checks that a report can be
// drawn from it. Unknown fields are ignored: adding a field does not change
// bench.ResultsVersion, so an older allot must still read a newer file.
func DecodeResults(r io.Reader) (*bench.ResultsFile, error) {
	data, err := io.ReadAll(io.LimitReader(r, ResultsBytesMax+1))
	if err != nil {
		return nil, fmt.Errorf("report: reading results: %w", err)
	}
	if len(data) > ResultsBytesMax {
		return nil, fmt.Errorf("%w: it is larger than the %d bytes a results file may be", ErrNotResults, ResultsBytesMax)
	}
	var f bench.ResultsFile
	if err := json.Unmarshal(data, &f); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line, col := position(data, syn.Offset)
			return nil, fmt.Errorf("report: results file is not valid JSON (line %d, column %d): %v", line, col, err)
		}
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return nil, fmt.Errorf("%w: field %q holds a JSON %s, want %s", ErrNotResults, typ.Field, typ.Value, typ.Type)
		}
		return nil, fmt.Errorf("%w: %v", ErrNotResults, err)
	}
	if err := Validate(&f); err != nil {
		return nil, err
	}
	return &f, nil
}

// Validate checks what the report relies on: a known version and at least
// one run with a store name.
func Validate(f *bench.ResultsFile) error {
	if f == nil {
		return errors.New("report: no results file")
	}
	if f.Version == 0 {
		return fmt.Errorf("%w: it has no \"version\" field", ErrNotResults)
	}
	if f.Version > bench.ResultsVersion {
		return fmt.Errorf("report: results file version %d is newer than this allot reads (%d): use a newer allot", f.Version, bench.ResultsVersion)
	}
	if f.Version < 0 {
		return fmt.Errorf("%w: version %d", ErrNotResults, f.Version)
	}
	if len(f.Runs) == 0 {
		return fmt.Errorf("%w: it holds no runs", ErrNotResults)
	}
	for i, r := range f.Runs {
		if r.Store == "" {
			return fmt.Errorf("%w: run %d has no store name", ErrNotResults, i+1)
		}
	}
	return nil
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < offset && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}
