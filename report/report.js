// Draws the report's charts with uPlot from the JSON block #allot-data, then
// writes a self-check onto <html> as data attributes: how many charts there
// are, how many drew coloured pixels, how many network requests the page
// made and how many the Content-Security-Policy refused. The report's tests
// read these from Chromium's DOM dump.
(function () {
  "use strict";
  var guard = window.allotGuard || { violations: [], errors: [] };
  var style = getComputedStyle(document.documentElement);
  function color(i) {
    return style.getPropertyValue("--c" + (i % 10)).trim() || "#1f77b4";
  }

  // HDR axis: x = 1/(1-q), so each decade of x is one more nine.
  function percentText(x) {
    if (x <= 1) return "0%";
    var nines = Math.round(Math.log10(x));
    var p = 100 * (1 - 1 / x);
    return String(+p.toFixed(Math.max(0, nines - 2))) + "%";
  }
  function msText(v) {
    if (v == null) return "—";
    if (v >= 100) return v.toFixed(0) + " ms";
    return String(+v.toPrecision(3)) + " ms";
  }
  function countText(v) {
    if (v == null) return "—";
    return Math.round(v).toLocaleString("en-US");
  }
  // logSplits places ticks and grid lines on a log axis at powers of ten,
  // adding 2× and 5× steps when the axis spans too few decades to read.
  function logSplits(min, max, fine) {
    var lo = Math.floor(Math.log10(min)), hi = Math.ceil(Math.log10(max));
    var steps = fine && hi - lo <= 2 ? [1, 2, 5] : [1];
    var out = [];
    for (var e = lo; e <= hi; e++) {
      for (var i = 0; i < steps.length; i++) {
        var v = steps[i] * Math.pow(10, e);
        if (v >= min * 0.9999 && v <= max * 1.0001) out.push(v);
      }
    }
    return out;
  }
  function shortNumber(v) {
    return v == null ? "" : String(+v.toPrecision(3));
  }

  function options(c, width) {
    var xScale = { time: false };
    var yScale = {};
    var xAxis = { label: c.xLabel, stroke: "#3c4043", grid: { stroke: "#e8eaed" } };
    var yAxis = {
      label: c.yLabel, stroke: "#3c4043", grid: { stroke: "#e8eaed" },
      // Wide enough for the longest tick label, so "10,000,000" does not
      // run into the axis title.
      size: function (u, values) {
        var longest = 0;
        (values || []).forEach(function (v) { longest = Math.max(longest, String(v == null ? "" : v).length); });
        return 18 + 7 * Math.max(longest, 3);
      }
    };
    // The y unit decides how values read: counts with separators, or
    // milliseconds to three significant digits.
    var ms = c.yUnit === "ms";
    var yValue = ms ? msText : countText;
    if (c.logX) {
      xScale.distr = 3;
      xScale.log = c.kind === "sweep" ? 2 : 10;
    }
    if (c.logY) {
      yScale.distr = 3;
      yScale.log = 10;
      yAxis.splits = function (u, i, min, max) { return logSplits(min, max, true); };
      yAxis.values = function (u, splits) { return splits.map(ms ? shortNumber : countText); };
    } else {
      yScale.range = function (u, min, max) { return [0, max > 0 ? max * 1.05 : 1]; };
    }
    if (c.kind === "spectrum") {
      var xLast = Math.max(10, c.x[c.x.length - 1]);
      xScale.range = function () { return [1, xLast]; };
      xAxis.splits = function (u, i, min, max) { return logSplits(Math.max(1, min), max, false); };
      xAxis.values = function (u, splits) { return splits.map(percentText); };
    } else if (c.kind === "throughput") {
      // Whole seconds only: the series has one point per second (and a
      // run longer than the hour its result keeps ends in a flat line to
      // its end, which may be days in).
      xAxis.incrs = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 21600, 43200, 86400, 172800, 604800];
    } else if (c.kind === "sweep") {
      var ticks = c.xTicks || c.x;
      xAxis.splits = function () { return ticks; };
      xAxis.values = function (u, splits) { return splits.map(function (v) { return String(v); }); };
      xScale.range = c.logX
        ? function () { return [ticks[0] / 1.3, ticks[ticks.length - 1] * 1.3]; }
        : function () {
          var pad = (ticks[ticks.length - 1] - ticks[0]) * 0.05 || 1;
          return [ticks[0] - pad, ticks[ticks.length - 1] + pad];
        };
    }
    var series = [{
      label: c.xLabel,
      value: c.kind === "spectrum" ? function (u, v) { return v == null ? "—" : percentText(v); }
        : function (u, v) { return v == null ? "—" : String(+v.toPrecision(6)); }
    }];
    c.series.forEach(function (s) {
      // A line needs two points: a run shorter than two seconds has one
      // throughput point, so show markers whenever a series is that sparse.
      var defined = s.y.filter(function (v) { return v != null; }).length;
      series.push({
        label: s.label,
        stroke: color(s.color),
        width: 2,
        dash: s.dash ? [6, 4] : undefined,
        spanGaps: false,
        points: { show: c.kind === "sweep" || defined < 3, size: 7 },
        value: function (u, v) { return yValue(v); }
      });
    });
    return {
      width: width,
      height: 320,
      scales: { x: xScale, y: yScale },
      axes: [xAxis, yAxis],
      series: series,
      legend: { live: true },
      cursor: { drag: { x: true, y: false } }
    };
  }

  function chartWidth(el) {
    return Math.max(320, Math.min(el.clientWidth || 1000, 1200));
  }

  var plots = [];
  function draw(c) {
    var el = document.getElementById(c.id);
    if (!el) return;
    try {
      var data = [c.x].concat(c.series.map(function (s) { return s.y; }));
      plots.push({ el: el, plot: new uPlot(options(c, chartWidth(el)), data, el) });
    } catch (e) {
      guard.errors.push(c.id + ": " + e.message);
      el.textContent = "This chart could not be drawn: " + e.message;
      el.className += " chart-error";
    }
  }

  // coloredPixels counts saturated pixels: axes, grid and text are grey, so
  // only drawn series are counted.
  function coloredPixels(canvas) {
    var ctx = canvas.getContext("2d");
    if (!ctx || !canvas.width || !canvas.height) return 0;
    var px = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    var n = 0;
    for (var i = 0; i < px.length; i += 4) {
      if (px[i + 3] > 0 && Math.max(px[i], px[i + 1], px[i + 2]) - Math.min(px[i], px[i + 1], px[i + 2]) > 60) n++;
    }
    return n;
  }

  function audit() {
    var root = document.documentElement;
    var charts = document.querySelectorAll("[data-chart]");
    var drawn = 0;
    for (var i = 0; i < charts.length; i++) {
      var el = charts[i];
      var canvas = el.querySelector("canvas");
      var w = canvas ? canvas.width : 0;
      var h = canvas ? canvas.height : 0;
      var colored = canvas ? coloredPixels(canvas) : 0;
      el.setAttribute("data-canvas-width", w);
      el.setAttribute("data-canvas-height", h);
      el.setAttribute("data-colored-pixels", colored);
      if (w > 0 && h > 0 && colored > 0) drawn++;
    }
    root.setAttribute("data-charts", charts.length);
    root.setAttribute("data-charts-drawn", drawn);
    root.setAttribute("data-resources", performance.getEntriesByType("resource").length);
    root.setAttribute("data-csp-violations", guard.violations.length);
    root.setAttribute("data-js-errors", guard.errors.length);
    if (guard.errors.length || guard.violations.length) {
      root.setAttribute("data-problems", guard.errors.concat(guard.violations).join(" | "));
    }
    root.setAttribute("data-ready", "true");
  }

  try {
    var set = JSON.parse(document.getElementById("allot-data").textContent);
    set.throughput.concat(set.spectrum, set.sweeps).forEach(draw);
  } catch (e) {
    guard.errors.push("report data: " + e.message);
  }

  var resizeTimer = 0;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      plots.forEach(function (p) { p.plot.setSize({ width: chartWidth(p.el), height: 320 }); });
    }, 150);
  });
  // uPlot paints on the next frame; audit after that.
  requestAnimationFrame(function () { setTimeout(audit, 0); });
})();
