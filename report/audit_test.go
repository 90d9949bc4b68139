package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A results file larger than ResultsBytesMax is refused before it is read:
// a wrong path (a log, a disk image, /dev/zero) used to be read whole into
// memory before the JSON decoder said anything.
func TestAuditReadResultsFileTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.json")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: no disk space is used.
	if err := fh.Truncate(ResultsBytesMax + 1); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	_, err = ReadResultsFile(path)
	if err == nil || !strings.Contains(err.Error(), "larger than") || !strings.Contains(err.Error(), "huge.json") {
		t.Fatalf("ReadResultsFile of %d bytes: %v; want an error naming the file and its size", ResultsBytesMax+1, err)
	}
	if !errors.Is(err, ErrNotResults) {
		t.Errorf("%v does not wrap ErrNotResults", err)
	}
}

// A reader with no size (a pipe, a device) is cut at ResultsBytesMax.
func TestAuditDecodeResultsEndlessInput(t *testing.T) {
	_, err := DecodeResults(endless{})
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("DecodeResults of an endless input: %v", err)
	}
}

// endless reads as spaces forever, as a device could.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
