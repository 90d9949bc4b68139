package benchsvc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// requestBytesMax bounds a request body.
const requestBytesMax = 64 << 10

// requestFieldsMax bounds the fields of one run request.
const requestFieldsMax = 64

// fieldsRefused are bench flags that name files on the server or change
// how the command prints: a run over HTTP gets its results over HTTP.
var fieldsRefused = map[string]string{
	"out":        "it names a file on the server; results come back over HTTP",
	"report":     "it names a file on the server; GET /v1/runs/{id}/report draws the report",
	"cpuprofile": "it names a file on the server",
	"ops-file":   "it names a file on the server",
	"data":       "it names a directory on the server",
	"json":       "results come back as JSON already",
	"quiet":      "the service prints no progress line",
	"help":       "not a parameter",
	"h":          "not a parameter",
}

var fieldNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*([-_][a-z0-9]+)*$`)

// ErrBadRequest wraps every error that is the client's fault.
var ErrBadRequest = errors.New("bad request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

// Args turns a run request, a JSON object whose fields are named like the
// bench's flags, into the equivalent `allot bench` argument list:
//
//	{"stores":["embedded","redis"],"preset":"hot","ops":50000,"workers":8,"duration":"10s"}
//	-> --duration=10s --ops=50000 --preset=hot --stores=embedded,redis --workers=8
//
// A string, number or boolean becomes --name=value; a list becomes a comma
// list (its items may not contain commas). Field names may use _ for -.
// Arguments come out in field-name order, so one request gives one command
// line. It does not know which flags exist: the bench's own parser says
// that (an unknown field is then a flag it does not define).
func Args(body []byte) ([]string, error) {
	if len(body) > requestBytesMax {
		return nil, badRequest("request body is larger than %d bytes", requestBytesMax)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		return nil, badRequest("body is not a JSON object: %v", err)
	}
	if fields == nil {
		return nil, badRequest("body is not a JSON object")
	}
	if err := onlyValue(body, dec); err != nil {
		return nil, err
	}
	if len(fields) > requestFieldsMax {
		return nil, badRequest("%d fields; at most %d", len(fields), requestFieldsMax)
	}
	names := make([]string, 0, len(fields))
	seen := map[string]string{}
	for k := range fields {
		if !fieldNameRE.MatchString(k) {
			return nil, badRequest("field %q is not a bench parameter name (lower case letters, digits, - or _)", k)
		}
		flag := strings.ReplaceAll(k, "_", "-")
		if other, dup := seen[flag]; dup {
			return nil, badRequest("fields %q and %q name the same parameter", other, k)
		}
		seen[flag] = k
		if why, refused := fieldsRefused[flag]; refused {
			return nil, badRequest("field %q is not accepted over HTTP: %s", k, why)
		}
		names = append(names, k)
	}
	slices.Sort(names)
	args := make([]string, 0, len(names))
	for _, k := range names {
		v, err := flagValue(fields[k])
		if err != nil {
			return nil, badRequest("field %q: %v", k, err)
		}
		args = append(args, "--"+strings.ReplaceAll(k, "_", "-")+"="+v)
	}
	return args, nil
}

// onlyValue refuses a body that holds anything but white space after the
// JSON value dec has decoded from it. dec.More does not: it reports no
// more for a stray } or ], and a body such as {"ops":1}} was accepted,
// kept as the run's request and then could not be encoded: its record
// answered 500 and never reached the data directory.
func onlyValue(body []byte, dec *json.Decoder) error {
	off := dec.InputOffset()
	rest := bytes.TrimLeft(body[off:], " \t\r\n")
	if len(rest) == 0 {
		return nil
	}
	return badRequest("body holds more than one JSON value: %q follows it at byte %d", preview(rest), off+int64(len(body[off:])-len(rest)))
}

// preview is the start of b, for an error message.
func preview(b []byte) string {
	const n = 16
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

func flagValue(v any) (string, error) {
	switch x := v.(type) {
	case string:
		if strings.ContainsAny(x, "\x00\n\r") {
			return "", errors.New("contains a control character")
		}
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case []any:
		if len(x) == 0 {
			return "", errors.New("an empty list")
		}
		items := make([]string, len(x))
		for i, e := range x {
			switch e.(type) {
			case string, json.Number:
			default:
				return "", fmt.Errorf("item %d is not a string or a number", i)
			}
			s, err := flagValue(e)
			if err != nil {
				return "", fmt.Errorf("item %d: %v", i, err)
			}
			if s == "" || strings.Contains(s, ",") {
				return "", fmt.Errorf("item %d is empty or contains a comma", i)
			}
			items[i] = s
		}
		return strings.Join(items, ","), nil
	case nil:
		return "", errors.New("null is not a value; leave the field out for the default")
	case map[string]any:
		return "", errors.New("an object is not a parameter value (want a string, number, boolean or list)")
	}
	return "", fmt.Errorf("a %T is not a parameter value (want a string, number, boolean or list)", v)
}
