package main

import (
	"errors"
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plotLabels are the x-axis names of the kinds, short enough to sit side by
// side.
var plotLabels = map[string]string{
	"snowfence_bigint": "snowfence\nBIGINT",
	"bigserial":        "bigserial",
	"uuidv4":           "UUIDv4",
	"uuidv7":           "UUIDv7",
	"uuidv8":           "snowfence\nUUIDv8",
	"public_id":        "public ID\n+ bigserial",
}

// writePlot draws grouped bars, one group per key type, of four costs
// relative to snowfence BIGINT: index size (all indexes), WAL bytes, time
// per insert and time per lookup. Higher is costlier in every bar, so rates
// are drawn as their inverse.
func writePlot(r run, path string) error {
	base, ok := r.base()
	if !ok {
		return errors.New("plot: the snowfence_bigint table was not measured, so there is nothing to draw ratios against")
	}
	series := []struct {
		name string
		of   func(result) float64
	}{
		{"index size", func(x result) float64 { return float64(x.indexBytes()) }},
		{"WAL bytes", func(x result) float64 { return float64(x.WALBytes) }},
		{"time per insert", func(x result) float64 { return 1 / x.InsertRate }},
		{"time per lookup", func(x result) float64 { return 1 / x.LookupRate }},
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Cost of each key type relative to snowfence BIGINT (%s rows per table)", thousands(r.Rows))
	p.Y.Label.Text = "× snowfence BIGINT (higher costs more)"
	p.Y.Min = 0
	w := vg.Points(11)
	top := 1.0
	for i, s := range series {
		vals := make(plotter.Values, len(r.Results))
		for j, x := range r.Results {
			vals[j] = s.of(x) / s.of(base)
			top = max(top, vals[j])
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		bars.Offset = w * vg.Length(2*i-len(series)+1) / 2
		p.Add(bars)
		p.Legend.Add(s.name, bars)
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Color = color.Gray{Y: 80}
	one.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(one)
	p.Y.Max = top * 1.08 // room above the tallest bar
	p.Legend.Top = true
	p.Legend.Left = true
	names := make([]string, len(r.Results))
	for j, x := range r.Results {
		names[j] = plotLabels[x.Kind]
	}
	p.NominalX(names...)
	p.Add(plotter.NewGrid())
	return p.Save(20*vg.Centimeter, 11*vg.Centimeter, path)
}
