/*
Copyright 2026 The tether Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bench

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// row is one line of the report: a measured value beside its floor.
type row struct {
	Name  string
	Unit  string
	Value float64
	// Floor is the same work done by the simplest client of the same
	// control plane in the same run; FloorOf says what that was.
	Floor   float64
	FloorOf string
	// Target is what the operator should reach, checked by Met.
	Target string
	Met    func(r row) bool
}

// Ratio is Value/Floor; NaN when the floor is zero.
func (r row) Ratio() float64 {
	if r.Floor == 0 {
		return math.NaN()
	}
	return r.Value / r.Floor
}

func (r row) mark() string {
	switch {
	case r.Met == nil:
		return ""
	case r.Met(r):
		return "met"
	default:
		return "MISSED"
	}
}

func ratioAtMost(x float64) func(row) bool  { return func(r row) bool { return r.Ratio() <= x } }
func ratioAtLeast(x float64) func(row) bool { return func(r row) bool { return r.Ratio() >= x } }
func valueAtMost(x float64) func(row) bool  { return func(r row) bool { return r.Value <= x } }
func valueBelow(x float64) func(row) bool   { return func(r row) bool { return r.Value < x } }

func number(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e9:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// table renders the rows as an aligned plain-text table.
func table(rows []row) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "row\tvalue\tunit\tfloor\tfloor is\tratio\ttarget\t")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, number(r.Value), r.Unit, number(r.Floor), r.FloorOf,
			number(r.Ratio()), r.Target, r.mark())
	}
	_ = w.Flush()
	return b.String()
}

// writeReport writes table.txt, results.csv and results.png into dir.
func writeReport(dir, header string, rows []row) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "table.txt"), []byte(header+"\n"+table(rows)), 0o644); err != nil {
		return err
	}
	if err := writeCSV(filepath.Join(dir, "results.csv"), rows); err != nil {
		return err
	}
	return writeChart(filepath.Join(dir, "results.png"), header, rows)
}

func writeCSV(path string, rows []row) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"row", "value", "unit", "floor", "floor_is", "ratio", "target", "met"})
	for _, r := range rows {
		_ = w.Write([]string{r.Name, fmt.Sprint(r.Value), r.Unit, fmt.Sprint(r.Floor), r.FloorOf,
			fmt.Sprint(r.Ratio()), r.Target, r.mark()})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// writeChart draws each row's ratio to its floor on a log scale (rows whose
// floor is zero have no ratio and are left out), with 1 (the floor) marked.
func writeChart(path, title string, rows []row) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "value / floor (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var pts plotter.XYs
	var names []string
	for _, r := range rows {
		ratio := r.Ratio()
		if math.IsNaN(ratio) || math.IsInf(ratio, 0) || ratio <= 0 {
			continue
		}
		pts = append(pts, plotter.XY{X: float64(len(names)), Y: ratio})
		names = append(names, r.Name)
	}
	if len(pts) == 0 { // e.g. only the fault rows, which count what went wrong
		p.Title.Text += "\n(no row of this run has a floor to chart against)"
		p.Y.Scale, p.Y.Tick.Marker = plot.LinearScale{}, plot.DefaultTicks{}
		return p.Save(12*vg.Inch, 6*vg.Inch, path)
	}
	floor, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(names)) - 0.5, Y: 1}})
	if err != nil {
		return err
	}
	floor.Color = color.Gray{Y: 128}
	floor.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	dots, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	dots.Shape = draw.CircleGlyph{}
	dots.Radius = vg.Points(5)
	dots.Color = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	labels, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: ratioLabels(pts)})
	if err != nil {
		return err
	}
	labels.Offset = vg.Point{X: vg.Points(7), Y: vg.Points(-3)}
	p.Add(plotter.NewGrid(), floor, dots, labels)
	p.Legend.Add("floor = 1", floor)
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.Y.Min = math.Min(p.Y.Min, 0.5)
	p.Y.Max = math.Max(p.Y.Max, 2)
	return p.Save(vg.Length(90+45*len(names))*vg.Millimeter/2+100*vg.Millimeter, 140*vg.Millimeter, path)
}

func ratioLabels(pts plotter.XYs) []string {
	out := make([]string, len(pts))
	for i, p := range pts {
		out[i] = number(p.Y) + "×"
	}
	return out
}
