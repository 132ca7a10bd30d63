// The report's own script, inlined into the HTML next to uPlot (ts/report/html.ts).
// It draws each chart from the embedded data (lines in the colours the report chose, a
// spread as a band mean ± spread around its mean), marks findings and divergences at their
// step, and makes a mark open what it points at. Plain ES2020 with no imports: it runs
// from a file:// page with no network.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var MARK_COLORS = { critical: '#d62728', warn: '#ff7f0e', info: '#1f77b4', divergence: '#9467bd' };
  var HEIGHT = 220;

  /** Tick and legend numbers: learning rates (1e-6) must not read 0. */
  function fmt(v) {
    if (v === null || v === undefined || !isFinite(v)) return '--';
    var a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2).replace(/\.?0+e/, 'e');
    return String(Number(v.toPrecision(4)));
  }

  /** Axis ticks with as many digits as their spacing needs (2.3450, 2.3452 stay apart). */
  function ticks(u, splits, axisIdx, space, incr) {
    if (!(incr > 0) || !isFinite(incr)) return splits.map(fmt);
    var big = 0;
    splits.forEach(function (v) {
      big = Math.max(big, Math.abs(v));
    });
    if (big !== 0 && (big < 1e-3 || big >= 1e6)) {
      var digits = Math.min(8, Math.max(0, Math.ceil(Math.log10(big / incr) - 1e-9)));
      return splits.map(function (v) {
        return v === 0 ? '0' : v.toExponential(digits).replace(/\.?0+e/, 'e');
      });
    }
    // decimals of the step itself: 0.25 → 2, 0.0002 → 4, 50 → 0
    var text = String(Number(incr.toPrecision(6)));
    var decimals = text.indexOf('e-') > 0 ? Number(text.split('e-')[1]) : text.indexOf('.') >= 0 ? text.length - text.indexOf('.') - 1 : 0;
    return splits.map(function (v) {
      return v.toFixed(Math.min(12, decimals));
    });
  }

  /** Opens and shows the element a mark points at (a finding's details, a diff row). */
  function reveal(id) {
    var el = document.getElementById(id);
    if (!el) return;
    if (el.tagName === 'DETAILS') el.open = true;
    el.scrollIntoView({ block: 'start' });
    el.classList.remove('flash');
    void el.offsetWidth; // restart the highlight animation
    el.classList.add('flash');
  }

  /** Vertical marks: a shaded onset→last span and a dashed onset line on the canvas, a clickable flag over it. */
  function marksPlugin(marks) {
    var flags = [];
    // flags at nearby steps stack in lanes instead of covering each other
    function place(u) {
      var laneEnds = [];
      flags
        .map(function (f) {
          return { f: f, left: u.valToPos(f.mark.step, 'x') };
        })
        .sort(function (a, b) {
          return a.left - b.left;
        })
        .forEach(function (p) {
          var inside = p.left >= 0 && p.left <= u.over.clientWidth;
          p.f.el.style.display = inside ? '' : 'none';
          if (!inside) return;
          var lane = 0;
          while (lane < laneEnds.length && laneEnds[lane] > p.left) lane++;
          laneEnds[lane] = p.left + p.f.el.offsetWidth + 4;
          p.f.el.style.left = p.left + 'px';
          p.f.el.style.top = lane * 16 + 'px';
        });
    }
    return {
      hooks: {
        ready: [
          function (u) {
            marks.forEach(function (mark) {
              var el = document.createElement('button');
              el.type = 'button';
              el.className = 'mark mark-' + mark.kind;
              el.dataset.target = mark.target;
              el.dataset.step = String(mark.step);
              el.title = mark.label + ' from step ' + mark.step + (mark.to !== null ? ' to ' + mark.to : '') + ' (click for details)';
              el.textContent = mark.label;
              el.addEventListener('click', function (ev) {
                ev.stopPropagation();
                reveal(mark.target);
              });
              // a click on the flag must not start uPlot's drag-to-zoom
              el.addEventListener('mousedown', function (ev) {
                ev.stopPropagation();
              });
              u.over.appendChild(el);
              flags.push({ el: el, mark: mark });
            });
            place(u);
          },
        ],
        draw: [
          function (u) {
            var ctx = u.ctx;
            var top = u.bbox.top;
            var height = u.bbox.height;
            marks.forEach(function (mark) {
              var color = MARK_COLORS[mark.kind] || '#555';
              var x0 = u.valToPos(mark.step, 'x', true);
              ctx.save();
              // zoomed in, a mark outside the visible steps must not paint over the axes
              ctx.beginPath();
              ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
              ctx.clip();
              if (mark.to !== null && mark.to > mark.step) {
                var x1 = u.valToPos(mark.to, 'x', true);
                ctx.globalAlpha = 0.08;
                ctx.fillStyle = color;
                ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
                ctx.globalAlpha = 1;
              }
              ctx.strokeStyle = color;
              ctx.lineWidth = 1.5 * (window.devicePixelRatio || 1);
              ctx.setLineDash([6, 4]);
              ctx.beginPath();
              ctx.moveTo(x0, top);
              ctx.lineTo(x0, top + height);
              ctx.stroke();
              ctx.restore();
            });
            place(u);
          },
        ],
      },
    };
  }

  /** `#rrggbb` at `alpha` (a band's fill and edges). */
  function rgba(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return 'rgba(' + ((n >> 16) & 255) + ',' + ((n >> 8) & 255) + ',' + (n & 255) + ',' + alpha + ')';
  }

  function makeChart(el, chart) {
    var xs = data.x[chart.x];
    var usesRight = chart.series.some(function (s) {
      return s.axis === 1;
    });
    var series = [{ label: 'step' }].concat(
      chart.series.map(function (s) {
        return {
          label: s.label,
          scale: s.axis === 1 ? 'y2' : 'y',
          stroke: s.color,
          width: 1.25,
          spanGaps: true,
          points: { show: false },
          value: function (u, v) {
            return fmt(v);
          },
        };
      }),
    );
    var columns = [xs].concat(chart.values);
    // each band: its upper and lower edge as two faint series, filled between; the legend
    // shows the spread itself once (the lower edge's row is hidden, and follows the upper's toggle)
    var bands = [];
    var lowerOf = {};
    chart.bands.forEach(function (b) {
      var mean = chart.series[b.of];
      var hi = series.length;
      series.push({
        label: b.label,
        scale: mean.axis === 1 ? 'y2' : 'y',
        stroke: rgba(b.color, 0.35),
        width: 1,
        spanGaps: true,
        points: { show: false },
        value: function (u, v, si, idx) {
          return idx === null || idx === undefined ? '--' : fmt(b.values[idx]);
        },
      });
      series.push({
        label: b.label + ' (lower edge)',
        class: 'band-lower',
        scale: mean.axis === 1 ? 'y2' : 'y',
        stroke: rgba(b.color, 0.35),
        width: 1,
        spanGaps: true,
        points: { show: false },
      });
      columns.push(b.hi, b.lo);
      lowerOf[hi] = hi + 1;
      bands.push({ series: [hi, hi + 1], fill: rgba(b.color, 0.14) });
    });
    var axes = [{ label: 'step' }, { scale: 'y', label: chart.axes[0], size: 64, values: ticks }];
    if (usesRight) axes.push({ scale: 'y2', side: 1, label: chart.axes[1] || '', size: 64, values: ticks, grid: { show: false } });
    var opts = {
      width: Math.max(280, el.clientWidth),
      height: HEIGHT,
      series: series,
      bands: bands,
      axes: axes,
      scales: { x: { time: false } },
      cursor: { sync: { key: chart.x } },
      legend: { live: true },
      hooks: {
        setSeries: [
          function (u, idx, o) {
            if (idx !== null && lowerOf[idx] !== undefined && o && o.show !== undefined) u.setSeries(lowerOf[idx], { show: o.show }, false);
          },
        ],
      },
      plugins: [marksPlugin(chart.marks)],
    };
    return new uPlot(opts, columns, el);
  }

  var plots = [];
  var failed = 0;
  document.querySelectorAll('.chart[data-chart]').forEach(function (el) {
    var chart = data.charts[Number(el.dataset.chart)];
    try {
      plots.push({ el: el, plot: makeChart(el, chart) });
      el.dataset.rendered = 'true';
    } catch (err) {
      failed++;
      el.dataset.rendered = 'false';
      el.textContent = 'This chart could not be drawn: ' + (err && err.message ? err.message : String(err));
      console.error('rlprobe report: chart ' + chart.id + ' failed', err);
    }
  });
  document.body.dataset.charts = String(plots.length);
  document.body.dataset.chartsFailed = String(failed);

  var resizeTimer = null;
  window.addEventListener('resize', function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      plots.forEach(function (p) {
        p.plot.setSize({ width: Math.max(280, p.el.clientWidth), height: HEIGHT });
      });
    }, 100);
  });

  // a link to a finding (#finding-3) opens it
  function openHash() {
    if (location.hash.length > 1) reveal(decodeURIComponent(location.hash.slice(1)));
  }
  window.addEventListener('hashchange', openHash);
  openHash();
})();
