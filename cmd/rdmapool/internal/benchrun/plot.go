package benchrun

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // PNG, named here too for builds with -tags minimal
	_ "gonum.org/v1/plot/vg/vgsvg" // SVG
)

// PlotSeries is one line of a latency plot: one test over one transport.
type PlotSeries struct {
	Label string                  // the legend's entry, "rdma GET"
	Hist  *hdrhistogram.Histogram // latencies in nanoseconds
	// Color and Dashes pick the line's colour from plotutil.DarkColors and
	// its dash pattern from plotutil.DefaultDashes. SeriesOf gives a test
	// the same colour over every transport and a transport the same dashes
	// over every test, so that both comparisons read at a glance.
	Color, Dashes int
}

// PlotFormat returns a plot file's format from its extension: "svg" or
// "png". Anything else is an error, so that a bad --plot is refused before
// the run rather than after it.
func PlotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	}
	return "", errors.New("want a file name ending in .svg or .png")
}

// SeriesOf returns a series for each test of each outcome, labelled with
// the transport and the test: "rdma GET", "tcp GET".
func SeriesOf(outs ...*Outcome) []PlotSeries {
	var series []PlotSeries
	colors := map[string]int{} // by test, in the order the tests first come
	for i, o := range outs {
		for _, r := range o.Results {
			c, ok := colors[r.Test]
			if !ok {
				c = len(colors)
				colors[r.Test] = c
			}
			series = append(series, PlotSeries{Label: string(o.Transport) + " " + r.Test, Hist: r.Hist, Color: c, Dashes: i})
		}
	}
	return series
}

// markedPercentiles are the percentiles WritePlot marks on each line.
var markedPercentiles = []float64{50, 99, 99.9}

// WritePlot writes the series as HdrHistogram's percentile distribution
// plot to path, SVG or PNG by its extension: the x axis is the percentile
// on the 1/(1-p) log scale, so that each further "9" (90%, 99%, 99.9%) gets
// the same width and the tail is as readable as the median; the y axis is
// the latency, in microseconds, or milliseconds when the largest is 10 ms
// or more, on a log scale too, so that one long stall does not flatten a
// body of tens of microseconds. Each line has its p50, p99 and p99.9
// marked (where it has that many latencies). The SVG names its font
// (Liberation Sans, by which the text was laid out) with the fonts of the
// same metrics after it, Arial and Helvetica, then any sans-serif, so that
// a renderer without Liberation still fits the text in its place. The
// file is written only once the plot is drawn, so an error leaves no
// half-written file.
func WritePlot(path, title string, series []PlotSeries) error {
	format, err := PlotFormat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var minNs, maxNs, maxCount int64
	for _, s := range series {
		if s.Hist != nil && s.Hist.TotalCount() > 0 {
			if maxCount == 0 || s.Hist.Min() < minNs {
				minNs = s.Hist.Min()
			}
			maxNs, maxCount = max(maxNs, s.Hist.Max()), max(maxCount, s.Hist.TotalCount())
		}
	}
	if maxCount == 0 {
		return errors.New("no latencies to plot")
	}
	unit, perUnit := "µs", 1e3
	if maxNs >= 10e6 {
		unit, perUnit = "ms", 1e6
	}

	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sansFont(p.Title.TextStyle.Font)
	p.X.Label.Text = "percentile"
	p.X.Scale = plot.LogScale{}
	// The axis ends at the first power of ten not below the largest count:
	// beyond 1/(1-p) = count the histogram has nothing more to say.
	p.X.Min, p.X.Max = 1, math.Max(100, math.Pow(10, math.Ceil(math.Log10(float64(maxCount)))))
	p.X.Tick.Marker = percentileTicks(p.X.Max)
	p.Y.Label.Text = "latency (" + unit + ")"
	p.Y.Scale = plot.LogScale{}
	// From the power of ten at or below the least latency to the one at or
	// above the largest: whole decades, each labelled 1, 2 and 5.
	lo := math.Max(float64(max(minNs, 1))/perUnit, 1e-3)
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo)))
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(math.Max(float64(maxNs)/perUnit, p.Y.Min*10))))
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min * 10
	}
	p.Y.Tick.Marker = logTicks{}
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sansFont(a.Label.TextStyle.Font)
		a.Tick.Label.Font = sansFont(a.Tick.Label.Font)
	}
	p.Legend.TextStyle.Font = sansFont(p.Legend.TextStyle.Font)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(8)
	p.Add(plotter.NewGrid())
	for _, s := range series {
		if s.Hist == nil || s.Hist.TotalCount() == 0 {
			continue
		}
		l, err := plotter.NewLine(percentilePoints(s.Hist, perUnit))
		if err != nil {
			return fmt.Errorf("%s: %w", s.Label, err)
		}
		color := plotutil.DarkColors[s.Color%len(plotutil.DarkColors)]
		l.Color = color
		l.Dashes = plotutil.Dashes(s.Dashes)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.Label, l)
		if marks := percentileMarks(s.Hist, perUnit); len(marks) > 0 {
			sc, err := plotter.NewScatter(marks)
			if err != nil {
				return fmt.Errorf("%s: %w", s.Label, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: color, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
			p.Add(sc)
		}
	}

	c, err := draw.NewFormattedCanvas(9*vg.Inch, 5.5*vg.Inch, format)
	if err != nil {
		return err
	}
	margin := vg.Points(8) // else the title and the last tick label touch the edges
	p.Draw(draw.Crop(draw.New(c), margin, -margin, margin, -margin))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return err
	}
	out := b.Bytes()
	if format == "svg" {
		out = svgFontFallbacks(out)
	}
	return os.WriteFile(path, out, 0o644)
}

// sansFont is f in Liberation Sans: its metrics are Arial's and
// Helvetica's, which a renderer without it can fall back to.
func sansFont(f font.Font) font.Font {
	f.Typeface, f.Variant = "Liberation", "Sans"
	return f
}

// svgFontFallbacks adds, after each font-family the SVG names, the fonts
// of the same metrics and the generic family.
func svgFontFallbacks(svg []byte) []byte {
	return bytes.ReplaceAll(svg, []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
}

// percentileMarks are h's latencies, divided by perUnit, at the marked
// percentiles that h has enough latencies to tell apart from its maximum.
func percentileMarks(h *hdrhistogram.Histogram, perUnit float64) plotter.XYs {
	var xys plotter.XYs
	for _, q := range markedPercentiles {
		x := 1 / (1 - q/100)
		if x > float64(h.TotalCount()) {
			break
		}
		xys = append(xys, plotter.XY{X: x, Y: float64(h.ValueAtQuantile(q)) / perUnit})
	}
	return xys
}

// logTicks label a log axis at 1, 2 and 5 times each power of ten, with
// unlabelled minor ticks at the other multiples: one decade of latency,
// 20 µs to 400 µs say, still gets a few labels.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	if min <= 0 || max <= min {
		return ticks
	}
	for d := math.Pow(10, math.Floor(math.Log10(min))); d <= max; d *= 10 {
		for m := 1; m < 10; m++ {
			v := float64(m) * d
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', 6, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// percentilePoints returns h's latency, divided by perUnit, at 1/(1-p)
// from 1 (the minimum) to the count (the maximum), 40 points a decade.
func percentilePoints(h *hdrhistogram.Histogram, perUnit float64) plotter.XYs {
	n, step := float64(h.TotalCount()), math.Pow(10, 1.0/40)
	var xys plotter.XYs
	for x := 1.0; x < n; x *= step {
		xys = append(xys, plotter.XY{X: x, Y: float64(h.ValueAtQuantile(100*(1-1/x))) / perUnit})
	}
	return append(xys, plotter.XY{X: max(n, 1), Y: float64(h.Max()) / perUnit})
}

// percentileTicks labels the 1/(1-p) axis in percentiles, up to xMax: 50%
// at 2, then 90%, 99%, 99.9% and so on at each power of ten.
func percentileTicks(xMax float64) plot.ConstantTicks {
	ticks := plot.ConstantTicks{{Value: 1}, {Value: 2, Label: "50%"}}
	for k, x := 1, 10.0; x <= xMax; k, x = k+1, x*10 {
		label := "90%"
		if k > 1 {
			label = "99" + strings.TrimSuffix("."+strings.Repeat("9", k-2), ".") + "%"
		}
		ticks = append(ticks, plot.Tick{Value: x, Label: label})
	}
	return ticks
}
