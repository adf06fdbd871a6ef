"use strict";
// A small time-series plot on a canvas, for the live view: lines, dots or bars over a time window, a y axis with
// round ticks, an x axis in seconds before the window's end, and a legend. No dependencies.
//
//   Plot.draw(canvas, {
//     start, end,                       // the window, in ms (Date.now()'s clock)
//     series: [{name, color, style: "line" | "dots" | "bars", points: [[timeMs, value], ...], width, gap}],
//     zero: true,                       // keep 0 on the y axis
//     empty: "no notifications yet",    // said when no point falls in the window
//   });
//
// Points are in time order. `width` is a bar's width in ms; `gap` (ms) breaks a line between points further apart.
(function () {
  const palette = ["#2563eb", "#0d9488", "#d97706", "#7c3aed", "#db2777", "#4b5563"];
  const ink = "#5b6472";
  const grid = "#e6e9ee";
  const font = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
  const margin = { left: 44, right: 10, top: 18, bottom: 18 };

  // A round step (1, 2 or 5 times a power of ten) that cuts `span` into about `count` pieces.
  function niceStep(span, count) {
    const raw = span / Math.max(1, count);
    if (!(raw > 0) || !isFinite(raw)) return 1;
    const magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
    const residual = raw / magnitude;
    return (residual > 5 ? 10 : residual > 2 ? 5 : residual > 1 ? 2 : 1) * magnitude;
  }

  function label(value, step) {
    if (Math.abs(value) >= 10000) return (value / 1000).toFixed(step >= 1000 ? 0 : 1) + "k";
    const decimals = Math.max(0, Math.min(6, -Math.floor(Math.log10(step) + 1e-9)));
    return value.toFixed(decimals);
  }

  // Sizes the canvas's backing store to its CSS box and the device's pixel ratio; returns the CSS size.
  function fit(canvas) {
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(120, canvas.clientWidth || 300);
    const height = Math.max(60, canvas.clientHeight || 110);
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
    }
    const context = canvas.getContext("2d");
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    return { context, width, height };
  }

  function visible(points, start, end) {
    const out = [];
    for (const point of points) {
      if (point[0] >= start && point[0] <= end && isFinite(point[1])) out.push(point);
    }
    return out;
  }

  function draw(canvas, options) {
    const { context, width, height } = fit(canvas);
    const start = options.start;
    const end = Math.max(options.end, start + 1);
    const series = (options.series || []).map((s, index) => ({
      ...s,
      color: s.color || palette[index % palette.length],
      shown: visible(s.points || [], start - (s.width || 0), end),
    }));
    context.clearRect(0, 0, width, height);
    context.font = font;
    context.textBaseline = "middle";

    const plotLeft = margin.left, plotRight = width - margin.right;
    const plotTop = margin.top, plotBottom = height - margin.bottom;
    const x = (time) => plotLeft + ((time - start) / (end - start)) * (plotRight - plotLeft);

    // The y range: the shown values, 0 too when asked, widened a little so a flat line is not on the frame.
    let low = Infinity, high = -Infinity;
    for (const s of series) for (const [, value] of s.shown) { low = Math.min(low, value); high = Math.max(high, value); }
    const hasData = low <= high;
    if (!hasData) { low = 0; high = 1; }
    if (options.zero) { low = Math.min(low, 0); high = Math.max(high, 0); }
    if (low === high) { const pad = Math.abs(low) * 0.1 || 1; low -= pad; high += pad; }
    const yStep = niceStep(high - low, Math.max(2, Math.floor((plotBottom - plotTop) / 28)));
    low = Math.floor(low / yStep) * yStep;
    high = Math.ceil(high / yStep) * yStep;
    const y = (value) => plotBottom - ((value - low) / (high - low)) * (plotBottom - plotTop);

    // Grid and y labels.
    context.strokeStyle = grid;
    context.lineWidth = 1;
    context.fillStyle = ink;
    context.textAlign = "right";
    for (let tick = low; tick <= high + yStep / 2; tick += yStep) {
      const at = Math.round(y(tick)) + 0.5;
      context.beginPath(); context.moveTo(plotLeft, at); context.lineTo(plotRight, at); context.stroke();
      context.fillText(label(tick, yStep), plotLeft - 6, at);
    }
    // X labels: seconds before the window's end.
    const spanSeconds = (end - start) / 1000;
    const xStep = niceStep(spanSeconds, Math.max(2, Math.floor((plotRight - plotLeft) / 70)));
    context.textAlign = "center";
    context.textBaseline = "top";
    for (let back = 0; back <= spanSeconds + 1e-9; back += xStep) {
      const at = Math.round(x(end - back * 1000)) + 0.5;
      context.beginPath(); context.moveTo(at, plotTop); context.lineTo(at, plotBottom); context.stroke();
      const text = back === 0 ? "now" : "-" + label(back, xStep) + " s";
      context.textAlign = at > plotRight - 20 ? "right" : "center";
      context.fillText(text, Math.min(at, plotRight), plotBottom + 4);
    }

    // The data, clipped to the plot area.
    context.save();
    context.beginPath();
    context.rect(plotLeft, plotTop - 2, plotRight - plotLeft, plotBottom - plotTop + 4);
    context.clip();
    for (const s of series) {
      context.strokeStyle = s.color;
      context.fillStyle = s.color;
      if (s.style === "bars") {
        const base = y(Math.max(low, Math.min(high, 0)));
        for (const [time, value] of s.shown) {
          const left = x(time), right = x(time + (s.width || 1000));
          context.fillRect(left + 0.5, Math.min(base, y(value)), Math.max(1, right - left - 1), Math.abs(base - y(value)));
        }
        continue;
      }
      if (s.style !== "dots") {
        context.lineWidth = 1.6;
        context.beginPath();
        let previous = null;
        for (const [time, value] of s.shown) {
          if (previous === null || (s.gap && time - previous > s.gap)) context.moveTo(x(time), y(value));
          else context.lineTo(x(time), y(value));
          previous = time;
        }
        context.stroke();
      }
      if (s.style === "dots" || s.shown.length <= 90) {
        const radius = s.style === "dots" ? 2.5 : 1.8;
        for (const [time, value] of s.shown) {
          context.beginPath(); context.arc(x(time), y(value), radius, 0, 2 * Math.PI); context.fill();
        }
      }
    }
    context.restore();

    // Legend, with each series' latest value.
    context.textAlign = "left";
    context.textBaseline = "middle";
    let left = plotLeft;
    for (const s of series) {
      if (s.legend === false) continue;
      const last = s.shown.length ? s.shown[s.shown.length - 1][1] : null;
      const text = s.name + (last === null || s.latest === false ? "" : " " + (Number.isInteger(last) ? last : last.toPrecision(4)));
      context.fillStyle = s.color;
      context.fillRect(left, 5, 8, 8);
      context.fillStyle = ink;
      context.fillText(text, left + 12, 9);
      left += context.measureText(text).width + 26;
    }
    if (!hasData && options.empty) {
      context.fillStyle = ink;
      context.textAlign = "center";
      context.fillText(options.empty, (plotLeft + plotRight) / 2, (plotTop + plotBottom) / 2);
    }
  }

  window.Plot = { draw, palette, niceStep };
})();
