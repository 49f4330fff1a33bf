package report

import (
	"bytes"
	"fmt"
	"html"
	"math"
)

// series is one implementation in a chart.
type series struct {
	Key, Label, Color string
}

// chartGroup is one case in a chart: a bar per series, in nanoseconds; a
// value <= 0 draws no bar.
type chartGroup struct {
	Label  string
	Values []float64 // indexed like the chart's series
}

// Chart geometry, in SVG user units.
const (
	chartLabelW = 150 // case labels
	chartPlotW  = 600 // the bars
	chartRightW = 70  // value labels past the longest bar
	chartBarH   = 9
	chartBarGap = 1
	chartGroupG = 12 // between groups
	chartTop    = 48 // title and legend
	chartAxisH  = 34 // tick labels and axis title
)

// barChartSVG draws a horizontal grouped bar chart of time per call on a
// logarithmic axis, one group per case and one bar per series, each bar
// labelled with its value. It never reads files or the clock.
func barChartSVG(title string, ss []series, groups []chartGroup) []byte {
	lo, hi := math.Inf(1), 0.0
	for _, g := range groups {
		for _, v := range g.Values {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	// Whole decades around the data.
	dLo, dHi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dHi == dLo {
		dHi++
	}
	x := func(v float64) float64 {
		return chartLabelW + (math.Log10(v)-dLo)/(dHi-dLo)*chartPlotW
	}
	groupH := len(ss)*(chartBarH+chartBarGap) + chartGroupG
	legendRows := (len(ss) + 3) / 4
	top := chartTop + legendRows*14
	height := top + len(groups)*groupH + chartAxisH
	width := chartLabelW + chartPlotW + chartRightW

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="10">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", 8, html.EscapeString(title))
	for i, s := range ss {
		lx := 8 + (i%4)*((width-16)/4)
		ly := 34 + (i/4)*14
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			lx, ly-9, s.Color, lx+14, ly, html.EscapeString(s.Label))
	}
	plotBottom := top + len(groups)*groupH
	for d := dLo; d <= dHi; d++ {
		gx := x(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#dddddd"/>`+"\n", gx, top-4, gx, plotBottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", gx, plotBottom+14, decadeLabel(d))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">time per call (log scale; shorter is faster)</text>`+"\n",
		chartLabelW+chartPlotW/2, plotBottom+28)
	for gi, g := range groups {
		gy := top + gi*groupH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" font-weight="bold">%s</text>`+"\n",
			chartLabelW-6, gy+len(ss)*(chartBarH+chartBarGap)/2+4, html.EscapeString(g.Label))
		for si, s := range ss {
			if si >= len(g.Values) || g.Values[si] <= 0 {
				continue
			}
			v := g.Values[si]
			by := gy + si*(chartBarH+chartBarGap)
			w := math.Max(x(v)-chartLabelW, 1)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>`,
				chartLabelW, by, w, chartBarH, s.Color, html.EscapeString(s.Label), formatNs(v))
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="8">%s</text>`+"\n", chartLabelW+w+3, by+chartBarH-1, formatNs(v))
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// formatNs prints a duration in nanoseconds with three significant digits
// and a unit chosen for it.
func formatNs(ns float64) string {
	switch {
	case ns >= 1e6:
		return trim3(ns/1e6) + " ms"
	case ns >= 1e3:
		return trim3(ns/1e3) + " µs"
	default:
		return trim3(ns) + " ns"
	}
}

func trim3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// decadeLabel names the power of ten d of nanoseconds, such as "10 µs".
func decadeLabel(d float64) string {
	units := []string{"ns", "µs", "ms", "s"}
	i := int(d) / 3
	if d < 0 || i >= len(units) {
		return fmt.Sprintf("1e%.0f ns", d)
	}
	return fmt.Sprintf("%.0f %s", math.Pow(10, float64(int(d)%3)), units[i])
}
