"use strict";
// A small time-series plot on a canvas: lines, dots or bars over a time window, a y axis with round ticks, an x axis
// in seconds before the window's end, a legend with each series' latest value. No dependencies.
//   Plot.draw(canvas, {start, end, zero, empty, series: [{name, color, style, points: [[ms, value]], width, latest}]})
// `start`/`end` bound the window (ms); `style` is "line" (default), "dots" or "bars" (`width` ms wide); `zero` keeps
// 0 on the y axis, `integer` whole ticks; `empty` is said when no point is in the window; points are in time order.
(() => {
const palette = ["#2563eb", "#0d9488", "#d97706", "#7c3aed", "#db2777", "#4b5563"];
const ink = "#5b6472", grid = "#e6e9ee";
const margin = { left: 44, right: 10, top: 18, bottom: 18 };

// A round step (1, 2 or 5 times a power of ten) that cuts `span` into about `count` pieces.
function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  if (!(raw > 0 && isFinite(raw))) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const residual = raw / magnitude;
  return (residual > 5 ? 10 : residual > 2 ? 5 : residual > 1 ? 2 : 1) * magnitude;
}

function label(value, step) {
  if (Math.abs(value) >= 1e4) return (value / 1000).toFixed(step >= 1000 ? 0 : 1) + "k";
  return value.toFixed(Math.max(0, Math.min(6, -Math.floor(Math.log10(step) + 1e-9))));
}

function draw(canvas, options) {
  // The backing store at the CSS size and the device's pixel ratio.
  const ratio = devicePixelRatio || 1;
  const width = Math.max(120, canvas.clientWidth || 300), height = Math.max(60, canvas.clientHeight || 110);
  if (canvas.width !== Math.round(width * ratio)) canvas.width = Math.round(width * ratio);
  if (canvas.height !== Math.round(height * ratio)) canvas.height = Math.round(height * ratio);
  const c = canvas.getContext("2d");
  c.setTransform(ratio, 0, 0, ratio, 0, 0);
  c.clearRect(0, 0, width, height);
  c.font = "11px system-ui, sans-serif";

  const start = options.start, end = Math.max(options.end, start + 1);
  const series = (options.series || []).map((s, index) => ({ ...s, color: s.color || palette[index % palette.length],
    shown: (s.points || []).filter(([t, v]) => t >= start - (s.width || 0) && t <= end && isFinite(v)) }));
  const left = margin.left, right = width - margin.right, top = margin.top, bottom = height - margin.bottom;
  const x = (time) => left + ((time - start) / (end - start)) * (right - left);

  // The y range: the values shown (and 0 when asked), widened to round ticks; a flat line gets some room.
  let low = Infinity, high = -Infinity;
  for (const s of series) for (const [, v] of s.shown) { low = Math.min(low, v); high = Math.max(high, v); }
  const hasData = low <= high;
  if (!hasData) { low = 0; high = 1; }
  if (options.zero) { low = Math.min(low, 0); high = Math.max(high, 0); }
  if (low === high) { const pad = Math.abs(low) * 0.1 || 1; low -= pad; high += pad; }
  const yStep = Math.max(options.integer ? 1 : 0, niceStep(high - low, Math.max(2, Math.floor((bottom - top) / 28))));
  low = Math.floor(low / yStep) * yStep;
  high = Math.ceil(high / yStep) * yStep;
  const y = (value) => bottom - ((value - low) / (high - low)) * (bottom - top);

  const rule = (x0, y0, x1, y1) => { c.beginPath(); c.moveTo(x0, y0); c.lineTo(x1, y1); c.stroke(); };
  c.strokeStyle = grid;
  c.lineWidth = 1;
  c.fillStyle = ink;
  c.textAlign = "right";
  c.textBaseline = "middle";
  for (let tick = low; tick <= high + yStep / 2; tick += yStep) {
    const at = Math.round(y(tick)) + 0.5;
    rule(left, at, right, at);
    c.fillText(label(tick, yStep), left - 6, at);
  }
  const span = (end - start) / 1000;
  const xStep = niceStep(span, Math.max(2, Math.floor((right - left) / 70)));
  c.textBaseline = "top";
  for (let back = 0; back <= span + 1e-9; back += xStep) {
    const at = Math.round(x(end - back * 1000)) + 0.5;
    rule(at, top, at, bottom);
    c.textAlign = at > right - 20 ? "right" : "center";
    c.fillText(back === 0 ? "now" : `-${label(back, xStep)} s`, Math.min(at, right), bottom + 4);
  }

  c.save();
  c.beginPath();
  c.rect(left, top - 2, right - left, bottom - top + 4);
  c.clip();
  for (const s of series) {
    c.strokeStyle = c.fillStyle = s.color;
    if (s.style === "bars") {
      const base = y(Math.max(low, Math.min(high, 0)));
      for (const [t, v] of s.shown) {
        c.fillRect(x(t) + 0.5, Math.min(base, y(v)), Math.max(1, x(t + (s.width || 1000)) - x(t) - 1), Math.abs(base - y(v)));
      }
      continue;
    }
    if (s.style !== "dots") {
      c.lineWidth = 1.6;
      c.beginPath();
      s.shown.forEach(([t, v], index) => (index ? c.lineTo(x(t), y(v)) : c.moveTo(x(t), y(v))));
      c.stroke();
    }
    if (s.style === "dots" || s.shown.length <= 90) {
      for (const [t, v] of s.shown) { c.beginPath(); c.arc(x(t), y(v), s.style === "dots" ? 2.5 : 1.8, 0, 7); c.fill(); }
    }
  }
  c.restore();

  c.textAlign = "left";
  c.textBaseline = "middle";
  let at = left;
  for (const s of series) {
    const last = s.shown.length && s.latest !== false ? s.shown[s.shown.length - 1][1] : null;
    const text = s.name + (last === null ? "" : " " + (Number.isInteger(last) ? last : parseFloat(last.toPrecision(4))));
    c.fillStyle = s.color;
    c.fillRect(at, 5, 8, 8);
    c.fillStyle = ink;
    c.fillText(text, at + 12, 9);
    at += c.measureText(text).width + 26;
  }
  if (!hasData && options.empty) {
    c.textAlign = "center";
    c.fillText(options.empty, (left + right) / 2, (top + bottom) / 2);
  }
}

window.Plot = { draw, palette };
})();
