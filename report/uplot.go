package report

// UPlotJS returns the vendored uPlot library's script (see assets.go), for
// other pages of the project that draw charts offline and inline it.
func UPlotJS() string { return uPlotJS }

// UPlotCSS returns uPlot's style sheet.
func UPlotCSS() string { return uPlotCSS }
