package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotReport draws three stacked panels over the run's time: throughput,
// p99 latency and the server's heap (and RSS), into a PNG at path.
func plotReport(r *Report, path string) error {
	var thr, p99, heap, rss, goal plotter.XYs
	for _, s := range r.Timeline {
		x := s.At.Minutes()
		if s.At > 0 {
			thr = append(thr, plotter.XY{X: x, Y: s.Throughput})
			p99 = append(p99, plotter.XY{X: x, Y: float64(s.P99.Microseconds()) / 1000})
		}
		if s.HeapMiB > 0 {
			heap = append(heap, plotter.XY{X: x, Y: s.HeapMiB})
			rss = append(rss, plotter.XY{X: x, Y: s.RSSMiB})
			goal = append(goal, plotter.XY{X: x, Y: s.GoalMiB})
		}
	}
	mode := "closed loop"
	if r.Rate > 0 {
		mode = fmt.Sprintf("paced at %.0f req/s", r.Rate)
	}
	panel := func(title, ylabel string, series ...any) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = "minutes"
		p.Y.Label.Text = ylabel
		p.Y.Min = 0
		p.X.Min = 0
		p.Add(plotter.NewGrid())
		if err := addLines(p, series...); err != nil {
			return nil, err
		}
		p.Legend.Top = true
		p.Legend.Left = true
		return p, nil
	}
	a, err := panel(fmt.Sprintf("Latchkey load, %s, %d workers: %.0f req/s, %d errors", mode, r.Workers, r.Throughput, r.Errors), "requests/s", "throughput", thr)
	if err != nil {
		return err
	}
	b, err := panel("p99 latency over each interval (all requests)", "ms", "p99", p99)
	if err != nil {
		return err
	}
	c, err := panel("server memory", "MiB", "heap in use", heap, "GC heap goal (2x live)", goal, "RSS", rss)
	if err != nil {
		return err
	}
	const w, h = 20 * vg.Centimeter, 24 * vg.Centimeter
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 3, Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadX: vg.Millimeter * 2, PadY: vg.Millimeter * 4}
	canvases := plot.Align([][]*plot.Plot{{a}, {b}, {c}}, tiles, dc)
	a.Draw(canvases[0][0])
	b.Draw(canvases[1][0])
	c.Draw(canvases[2][0])
	png := vgimg.PngCanvas{Canvas: img}
	f, err := createFile(path)
	if err != nil {
		return err
	}
	if _, err := png.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// addLines adds (name, XYs) pairs as coloured lines.
func addLines(p *plot.Plot, series ...any) error {
	for i := 0; i+1 < len(series); i += 2 {
		xys := series[i+1].(plotter.XYs)
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = plotColors[(i/2)%len(plotColors)]
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(series[i].(string), l)
	}
	return nil
}

var plotColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}
