package strictjson

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParse measures Parse alone on the benchmark corpus's largest
// requests (shared with the root package, testdata/bench) and on the
// generated documents of BenchmarkCanonical.
func BenchmarkParse(b *testing.B) {
	docs := map[string][]byte{
		"object2KB": []byte(benchObjectDoc()),
		"array200":  []byte(benchArrayDoc()),
	}
	for _, name := range []string{"check_events_200_valid", "check_array_200_valid"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "bench", name+".json"))
		if err != nil {
			b.Fatal(err)
		}
		docs[name] = data
	}
	for name, doc := range docs {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, err := Parse(doc, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
