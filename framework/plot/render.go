package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	xfont "golang.org/x/image/font"
)

// Formats are the file formats Render writes.
var Formats = []string{"svg", "png"}

func init() {
	// Sans-serif reads better at figure sizes; gonum's default is serif.
	gplot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
}

// Figure is one image: a title over one or more panels stacked, and one
// legend beside them for all.
type Figure struct {
	Name   string // the file name without its extension
	Title  string // two lines: what, then the script and the variant(s)
	panels []*panel
	titles []string // the panels'
}

func newFigure(name, title string, ps []*panel) *Figure {
	f := &Figure{Name: name, Title: title, panels: ps}
	for _, p := range ps {
		f.titles = append(f.titles, p.p.Title.Text)
	}
	if len(ps) == 1 {
		ps[0].p.Title.Text = "" // the figure's title says it
	}
	return f
}

// Labels are the legend's entries, in order.
func (f *Figure) Labels() []string {
	var out []string
	for _, e := range f.legend() {
		out = append(out, e.name)
	}
	return out
}

// Panels are the panels' titles, top to bottom.
func (f *Figure) Panels() []string {
	return f.titles
}

// legend merges the panels' entries: one per name, first seen first.
func (f *Figure) legend() []entry {
	var out []entry
	seen := map[string]bool{}
	for _, p := range f.panels {
		for _, e := range p.entries {
			if !seen[e.name] {
				seen[e.name] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// Sizes: a panel's height, the page's width, the title's band.
var (
	pageWidth   = 22 * vg.Centimeter
	panelHeight = 7.5 * vg.Centimeter
	titleHeight = 1.4 * vg.Centimeter
	maxLegend   = 7 * vg.Centimeter
)

// Render draws the figure in format (svg or png).
func Render(f *Figure, format string) ([]byte, error) {
	h := titleHeight
	for _, p := range f.panels {
		h += max(panelHeight, p.height)
	}
	var c vg.CanvasWriterTo
	switch format {
	case "svg":
		c = vgsvg.NewWith(vgsvg.UseWH(pageWidth, h))
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(pageWidth, h), vgimg.UseDPI(110))}
	default:
		return nil, fmt.Errorf("plot format %q: want %s", format, strings.Join(Formats, " or "))
	}
	dc := draw.New(c)
	f.draw(dc)
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	return b.Bytes(), nil
}

func (f *Figure) draw(dc draw.Canvas) {
	// The title: what, bold, then the script and the variant(s).
	top := dc.Max.Y
	lines := strings.SplitN(f.Title, "\n", 2)
	head := gplot.New().Title.TextStyle
	head.Font.Size = vg.Points(13)
	head.Font.Weight = xfont.WeightBold
	head.XAlign, head.YAlign = draw.XCenter, draw.YTop
	mid := (dc.Min.X + dc.Max.X) / 2
	dc.FillText(head, vg.Point{X: mid, Y: top - vg.Points(6)}, lines[0])
	if len(lines) > 1 {
		sub := head
		sub.Font.Size = vg.Points(10)
		sub.Font.Weight = xfont.WeightNormal
		dc.FillText(sub, vg.Point{X: mid, Y: top - vg.Points(24)}, lines[1])
	}

	// The legend's width: its longest entry, within bounds.
	leg := gplot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(9)
	leg.Padding = vg.Points(3.5)
	// As many entries as the height holds; the rest are counted.
	entries := f.legend()
	room := int((top - titleHeight - dc.Min.Y) / (leg.TextStyle.Height("Xg") + leg.Padding))
	if len(entries) > room && room > 1 {
		more := fmt.Sprintf("... and %d more", len(entries)-room+1)
		entries = append(entries[:room-1:room-1], entry{name: more})
	}
	var widest vg.Length
	for _, e := range entries {
		if e.thumb != nil {
			leg.Add(e.name, e.thumb)
		} else {
			leg.Add(e.name)
		}
		widest = max(widest, leg.TextStyle.Width(e.name))
	}
	legW := min(maxLegend, widest+leg.ThumbnailWidth+vg.Points(16))
	plots := dc
	plots.Max.Y = top - titleHeight
	plots.Max.X = dc.Max.X - legW
	ps := make([][]*gplot.Plot, len(f.panels))
	for i, p := range f.panels {
		ps[i] = []*gplot.Plot{p.p}
	}
	tiles := draw.Tiles{Rows: len(f.panels), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(10)}
	cs := gplot.Align(ps, tiles, plots)
	for i := range f.panels {
		f.panels[i].p.Draw(cs[i][0])
	}
	lc := dc
	lc.Min.X = plots.Max.X
	lc.Max.Y = plots.Max.Y - vg.Points(4)
	leg.Draw(lc)
}

// entry is one legend line.
type entry struct {
	name  string
	thumb gplot.Thumbnailer
}

// panel is one plot of a figure and its legend entries.
type panel struct {
	p       *gplot.Plot
	entries []entry
	height  vg.Length // when it needs more than panelHeight (a bar per run per row)
}

func newPanel(title, x, y string) *panel {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return &panel{p: p}
}

// palette is Tableau's ten colours: distinct on screen and in print.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

// style is line i's colour, and past the palette a dash as well.
func style(l *draw.LineStyle, i int, dashed bool) {
	l.Color = palette[i%len(palette)]
	l.Width = vg.Points(1.6)
	if dashed || i >= len(palette) {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
}

func (p *panel) line(name string, i int, xy plotter.XYs) {
	if len(xy) == 0 {
		return
	}
	l, err := plotter.NewLine(xy)
	if err != nil { // NaN or infinite values: the report never has them
		return
	}
	style(&l.LineStyle, i, false)
	p.p.Add(l)
	p.entries = append(p.entries, entry{name, l})
}

func (p *panel) stepLine(name string, i int, xy plotter.XYs, fill bool) {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return
	}
	l.StepStyle = plotter.PostStep
	style(&l.LineStyle, i, false)
	if fill {
		c := palette[i%len(palette)]
		l.FillColor = color.NRGBA{c.R, c.G, c.B, 0x60}
	}
	p.p.Add(l)
	p.entries = append(p.entries, entry{name, l})
}

// cdfLine draws an empirical CDF through xy's corners: each value
// holds its fraction until the next (a post step).
func (p *panel) cdfLine(name string, i int, dashed bool, xy plotter.XYs) {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return
	}
	l.StepStyle = plotter.PostStep
	style(&l.LineStyle, i, dashed)
	p.p.Add(l)
	p.entries = append(p.entries, entry{name, l})
}

func (p *panel) linePoints(name string, i int, dashed bool, xy plotter.XYs) {
	l, s, err := plotter.NewLinePoints(xy)
	if err != nil {
		return
	}
	style(&l.LineStyle, i, dashed)
	s.Color = palette[i%len(palette)]
	s.Shape = draw.CircleGlyph{}
	p.p.Add(l, s)
	p.entries = append(p.entries, entry{name, l})
}

func (p *panel) empty() bool { return len(p.entries) == 0 }

// orNil is the panel, or nil when it has no line.
func (p *panel) orNil() *panel {
	if p.empty() {
		return nil
	}
	return p
}

func (p *panel) yRange(lo, hi float64) {
	if p == nil {
		return
	}
	p.p.Y.Min, p.p.Y.Max = lo, max(hi, p.p.Y.Max)
}

// yFrom starts the y axis at lo (counts start at 0), and keeps a flat
// line off the frame.
func (p *panel) yFrom(lo float64) {
	if p == nil {
		return
	}
	p.p.Y.Min = lo
	if p.p.Y.Max <= lo {
		p.p.Y.Max = lo + 1
	}
}
