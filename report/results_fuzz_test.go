package report

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeResults: any input either fails to decode with an error, or
// decodes into a file WriteHTML renders without error or panic — a results
// file from a newer, older or broken allot must never crash the report.
func FuzzDecodeResults(f *testing.F) {
	good, err := json.Marshal(fixtureResults(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"version":1,"runs":[{"store":"x","throughput":[1,2,3],"seconds":2.5,"histogram":"HISTFAAAABx4nJNpmSzMwMDAxQABzFAaxmey/wBhAQMADgc=","histogram_unit":"us"}]}`))
	f.Add([]byte(`{"version":1,"runs":[{"store":"x","sweep":{"param":"workers","value":0,"label":"w=0"}},{"store":"y","sweep":{"param":"workers","value":-4,"label":"w=-4"},"latency_ms":{"p99":-1}}]}`))
	f.Add([]byte(`{"version":1,"environment":[1,2],"runs":[{"store":"<b>","histogram":"AAAA","histogram_unit":"ns","open_loop":{"rate":1e308,"service_histogram":"%%%"}}]}`))
	f.Add([]byte(`{"version":1,"runs":[{"store":"x","histogram":"HISTFAAAACh4nJNpmSzMwMDAyMDAwMBkxMDAwMLAwMDIwMAgBwAGEAGh","histogram_unit":"s"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rf, err := DecodeResults(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WriteHTML(&out, rf); err != nil {
			t.Fatalf("WriteHTML of a decoded file: %v", err)
		}
	})
}
