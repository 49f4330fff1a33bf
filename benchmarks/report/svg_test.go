package report

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestBarChartSVGIsWellFormed(t *testing.T) {
	ss := []series{{"a", "A & co", "#ff0000"}, {"b", "B <x>", "#00ff00"}}
	svg := barChartSVG("title", ss, []chartGroup{
		{Label: "case_one", Values: []float64{1500, 2_400_000}},
		{Label: "case_two", Values: []float64{0, 80}},
	})
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	rects := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	// background + 2 legend swatches + 3 bars (the zero value draws none)
	if rects != 6 {
		t.Errorf("rect elements = %d, want 6", rects)
	}
}

func TestDecadeLabel(t *testing.T) {
	for d, want := range map[float64]string{0: "1 ns", 3: "1 µs", 4: "10 µs", 5: "100 µs", 6: "1 ms", 9: "1 s"} {
		if got := decadeLabel(d); got != want {
			t.Errorf("decadeLabel(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestFormatNs(t *testing.T) {
	tests := []struct {
		ns   float64
		want string
	}{
		{12.345, "12.3 ns"},
		{1805, "1.80 µs"},
		{915305, "915 µs"},
		{2_400_000, "2.40 ms"},
	}
	for _, tt := range tests {
		if got := formatNs(tt.ns); got != tt.want {
			t.Errorf("formatNs(%v) = %q, want %q", tt.ns, got, tt.want)
		}
	}
}
