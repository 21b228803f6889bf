#include "correlator/report/page_assets.hpp"

namespace insert::correlate::report {

const std::string_view kPageStyle = R"css(
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
table.kv th { font-weight: normal; color: #555; }
tr.critical td { background: #fde8e8; } tr.warning td { background: #fff6e0; }
.note { color: #666; font-size: 0.9em; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 1em; }
.chart { position: relative; height: 280px; }
.chart.wide { height: 340px; }
#verdict { border: 2px solid #2e7d32; border-radius: 6px; padding: 0.4em 1em 0.6em; margin: 0.6em 0 1em;
  background: #f4fbf4; }
#verdict.warning { border-color: #e6a100; background: #fffbf0; }
#verdict.critical { border-color: #c62828; background: #fff6f6; }
#verdict h2 { margin: 0.2em 0; border: none; }
#verdict h3 { font-size: 1em; margin: 0.7em 0 0.2em; }
#verdict .headline { font-size: 1.05em; font-weight: 600; margin: 0.2em 0 0.4em; }
#verdict table { font-size: 0.85em; background: #fff; }
#verdict p, #verdict ul { margin: 0.2em 0; }
#verdict .episode { font-size: 0.9em; }
#verdict table.roles { width: 100%; table-layout: fixed; }
#verdict table.roles ul { margin: 0; padding-left: 1.2em; }
.sev { display: inline-block; font-size: 0.8em; font-weight: 600; padding: 0 4px; border-radius: 3px;
  background: #777; color: #fff; }
.sev.critical { background: #c62828; } .sev.warning { background: #b37400; }
td.claimed { color: #7a4300; }
td .origin { font-size: 0.85em; color: #555; }
#verdict td.kind, #verdict td.time { white-space: nowrap; }
nav.sections { font-size: 0.9em; }
)css";

// Errors of any script on the page (and console.error calls) go to data-errors on <html>
// and, once it exists, <body>: a test reads them from the DOM.
const std::string_view kErrorCaptureScript = R"js(
(function () {
  var errors = [];
  function note(text) {
    errors.push(String(text));
    var s = JSON.stringify(errors);
    document.documentElement.setAttribute('data-errors', s);
    if (document.body) document.body.setAttribute('data-errors', s);
  }
  window.insertReportErrors = errors;
  window.insertReportNote = note;
  window.addEventListener('error', function (e) {
    note('error: ' + (e.message || (e.target && e.target.tagName) || e));
  }, true);
  window.addEventListener('unhandledrejection', function (e) { note('rejection: ' + e.reason); });
  var original = console.error;
  console.error = function () {
    note('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
  document.documentElement.setAttribute('data-errors', '[]');
})();
)js";

// Draws every chart listed in the data block, then writes on <body>: data-charts-ready (the
// number of charts drawn), data-chart-points (points each chart holds, by canvas id) and
// data-errors. Each canvas gets data-points: the data elements Chart.js made for it.
const std::string_view kDrawChartsScript = R"js(
(function () {
  var body = document.body;
  body.setAttribute('data-errors', JSON.stringify(window.insertReportErrors));
  var data = JSON.parse(document.getElementById('insert-report-data').textContent);
  var drawn = 0, points = {};
  var palette = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b',
                 '#e377c2', '#7f7f7f', '#bcbd22'];
  function finish(chart, canvas) {
    var n = 0;  // elements drawn: the gaps between bins (null points) do not count
    for (var i = 0; i < chart.data.datasets.length; i++)
      n += chart.getDatasetMeta(i).data.filter(function (e) { return !e.skip; }).length;
    canvas.setAttribute('data-points', String(n));
    points[canvas.id] = n;
    drawn++;
  }
  function draw(id, config) {
    try {
      var canvas = document.getElementById(id);
      config.options = config.options || {};
      config.options.animation = false;
      config.options.maintainAspectRatio = false;
      finish(new Chart(canvas, config), canvas);
    } catch (e) {
      window.insertReportNote('chart ' + id + ': ' + e);
    }
  }
  // (a) latency CDF per application: at each percentile rank, the parts of that message.
  var parts = [['host', 1, 'rgba(31,119,180,0.55)'], ['network', 2, 'rgba(214,39,40,0.55)'],
               ['completion', 3, 'rgba(44,160,44,0.55)']];
  data.cdf.forEach(function (app) {
    draw(app.id, {
      type: 'line',
      data: { datasets: parts.map(function (p, k) {
        return { label: p[0], fill: k === 0 ? 'origin' : '-1', backgroundColor: p[2],
                 borderColor: p[2], borderWidth: 1, pointRadius: 0,
                 data: app.points.map(function (q) { return { x: q[0], y: q[p[1]] }; }) };
      }) },
      options: {
        scales: {
          x: { type: 'linear', min: 0, max: 100,
               title: { display: true, text: 'messages by total latency (percentile)' } },
          y: { stacked: true, title: { display: true, text: 'latency (us)' } } },
        plugins: { title: { display: true, text: app.label + ': ' + app.messages + ' messages' },
                   tooltip: { mode: 'index', intersect: false } } }
    });
  });
  // (b) network latency per cgroup over time, congestion episodes shaded.
  var episodes = {
    id: 'episodes',
    beforeDatasetsDraw: function (chart) {
      var x = chart.scales.x, area = chart.chartArea, ctx = chart.ctx;
      ctx.save();
      data.net.episodes.forEach(function (e) {
        var a = Math.max(area.left, x.getPixelForValue(e[0]));
        var b = Math.min(area.right, x.getPixelForValue(e[1]));
        if (b < a) return;
        ctx.fillStyle = 'rgba(255,160,0,0.18)';
        ctx.fillRect(a, area.top, Math.max(b - a, 2), area.bottom - area.top);
        ctx.fillStyle = '#a60';
        var label = 'congestion at ' + e[2];
        var right = a + 3 + ctx.measureText(label).width > area.right;
        ctx.textAlign = right ? 'right' : 'left';
        ctx.fillText(label, right ? b - 3 : a + 3, area.top + 12);
      });
      ctx.restore();
    }
  };
  // The network latency chart spans its own data and the episodes, not the whole report.
  var netFrom = Infinity, netTo = -Infinity;
  data.net.series.forEach(function (s) {
    s.points.forEach(function (q) { netFrom = Math.min(netFrom, q[0]); netTo = Math.max(netTo, q[0]); }); });
  data.net.episodes.forEach(function (e) {
    netFrom = Math.min(netFrom, e[0]); netTo = Math.max(netTo, e[1]); });
  var netPad = Math.max((netTo - netFrom) * 0.02, data.net.bin_ms * 1e-3);
  var timeAxis = { type: 'linear', min: Math.max(0, netFrom - netPad), max: netTo + netPad,
                   title: { display: true, text: 'time (s)' } };
  // A line per series, broken where bins between two points had no message.
  function withGaps(points) {
    var out = [];
    points.forEach(function (q, i) {
      if (i > 0 && q[0] - points[i - 1][0] > data.net.bin_ms * 1.5e-3)
        out.push({ x: (q[0] + points[i - 1][0]) / 2, y: null });
      out.push({ x: q[0], y: q[1] });
    });
    return out;
  }
  if (data.net.series.some(function (s) { return s.points.length > 0; })) {
    draw(data.net.id, {
      type: 'line',
      data: { datasets: data.net.series.map(function (s, k) {
        return { label: s.label + ' (' + s.msgs + ' msgs)', borderColor: palette[k % palette.length],
                 backgroundColor: palette[k % palette.length], borderWidth: 1.5, pointRadius: 1.5,
                 spanGaps: false, data: withGaps(s.points) };
      }) },
      options: {
        scales: { x: timeAxis,
                  y: { type: 'linear', beginAtZero: true,
                       title: { display: true, text: 'p99 network latency per ' + data.net.bin_ms + ' ms (us)' } } },
        plugins: { tooltip: { mode: 'nearest', intersect: false } } },
      plugins: [episodes]
    });
  }
  // (c) alerts over time: a lane per kind present, on the alerts' own time axis (broken
  // between bursts far apart: alert_axis.hpp). A point is an alert (its area grows with the
  // offences it counts, a line to its last offence) or, with many alerts, one kind's alerts
  // close in time (its area grows with them). Positions are axis units; ticks say seconds.
  if (data.alerts.points.length > 0) {
    var al = data.alerts, kinds = al.kinds, segments = al.segments, tickText = {};
    function niceStep(span, n) {
      var raw = span / Math.max(1, n), p = Math.pow(10, Math.floor(Math.log10(raw)));
      var m = raw / p;
      return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
    }
    function segmentTicks() {
      var ticks = [];
      segments.forEach(function (s) {
        var n = Math.max(1, Math.round(9 * (s[3] - s[2]) / al.width));
        var step = niceStep(s[1] - s[0], n), digits = Math.max(0, Math.ceil(-Math.log10(step)));
        for (var t = Math.ceil(s[0] / step) * step; t <= s[1] + step * 1e-9; t += step) {
          var x = s[2] + (t - s[0]) / (s[1] - s[0]) * (s[3] - s[2]);
          tickText[x] = t.toFixed(digits);
          ticks.push({ value: x });
        }
      });
      return ticks;
    }
    var marks = {
      id: 'alertMarks',
      beforeDatasetsDraw: function (chart) {
        var x = chart.scales.x, y = chart.scales.y, area = chart.chartArea, ctx = chart.ctx;
        ctx.save();
        // The breaks: the time the axis leaves out between two segments.
        for (var i = 1; i < segments.length; i++) {
          var a = x.getPixelForValue(segments[i - 1][3]), b = x.getPixelForValue(segments[i][2]);
          ctx.fillStyle = 'rgba(120,120,120,0.15)';
          ctx.fillRect(a, area.top, b - a, area.bottom - area.top);
          ctx.fillStyle = '#555';
          ctx.textAlign = 'center';
          var hidden = segments[i][0] - segments[i - 1][1];
          ctx.fillText('+' + (hidden >= 1 ? hidden.toFixed(1) + ' s' : (hidden * 1e3).toPrecision(3) + ' ms'),
                       (a + b) / 2, area.top + 12);
          ctx.fillText('skipped', (a + b) / 2, area.top + 24);
        }
        ctx.lineWidth = 2;
        al.points.forEach(function (p) {
          if (!(p[3] > p[0])) return;
          ctx.strokeStyle = palette[p[1] % palette.length];
          ctx.beginPath();
          ctx.moveTo(x.getPixelForValue(p[0]), y.getPixelForValue(p[1]));
          ctx.lineTo(x.getPixelForValue(p[3]), y.getPixelForValue(p[1]));
          ctx.stroke();
        });
        ctx.restore();
      }
    };
    draw(al.id, {
      type: 'bubble',
      data: { datasets: kinds.map(function (kind, k) {
        return { label: kind + ' (' + al.counts[k] + ')',
                 backgroundColor: palette[k % palette.length] + 'b0',
                 borderColor: palette[k % palette.length],
                 data: al.points.filter(function (p) { return p[1] === k; })
                   .map(function (p) { return { x: p[0], y: k, label: p[4],
                                                r: Math.min(16, 4 + 2 * Math.log2(Math.max(1, p[2]))) }; }) };
      }) },
      options: {
        scales: { x: { type: 'linear', min: 0, max: al.width,
                       afterBuildTicks: function (axis) { axis.ticks = segmentTicks(); },
                       ticks: { autoSkip: true, maxRotation: 0,
                                callback: function (v) { return tickText[v]; } },
                       title: { display: true, text: 'time (s)' } },
                  y: { type: 'linear', reverse: true, min: -0.6, max: kinds.length - 0.4,
                       afterBuildTicks: function (axis) {
                         axis.ticks = kinds.map(function (kind, k) { return { value: k }; }); },
                       ticks: { autoSkip: false, callback: function (v) {
                         return kinds[v] + ' (' + al.counts[v] + ')'; } } } },
        plugins: { title: { display: true, text: al.title }, legend: { display: false },
                   tooltip: { callbacks: { label: function (c) { return c.raw.label; } } } } },
      plugins: [marks]
    });
  }
  body.setAttribute('data-chart-points', JSON.stringify(points));
  body.setAttribute('data-charts-ready', String(drawn));
})();
)js";

}  // namespace insert::correlate::report
