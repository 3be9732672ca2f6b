// Injected by tests/chromium.rs into a copy of the report (the report itself has no script):
// measures the laid-out page and writes what it found into <pre id="iolab-checks"> as JSON.
(function () {
  const inside = (inner, outer, slack) =>
    inner.left >= outer.left - slack && inner.right <= outer.right + slack &&
    inner.top >= outer.top - slack && inner.bottom <= outer.bottom + slack;
  const describe = (el) => el.tagName + ' "' + (el.textContent || '').trim().slice(0, 60) + '"';
  const overflows = [];
  const covered = [];
  let labels = 0;
  const figures = [];
  for (const figure of document.querySelectorAll('figure.chart')) {
    const svg = figure.querySelector('svg');
    const box = svg.getBoundingClientRect();
    const texts = [];
    // Legend entries: a line sample (one stroke, or three short dashes) and a marker before the name.
    const legend = [];
    for (const text of svg.querySelectorAll('text')) {
      const strokes = [];
      for (let el = text.previousElementSibling; el && el.tagName !== 'text' && el.tagName !== 'rect'; el = el.previousElementSibling) {
        if (el.tagName === 'polyline') strokes.push(el);
      }
      // A sample is 32 px wide, or three dashes of 7 px (tick marks are 5 px).
      const width = strokes.length === 1 ? 32 : 7;
      const sample = (strokes.length === 1 || strokes.length === 3) && strokes.every((line) => {
        const ends = line.getAttribute('points').trim().split(/\s+/).map((p) => p.split(',').map(Number));
        return ends.length === 2 && ends[0][1] === ends[1][1] && ends[1][0] - ends[0][0] === width;
      });
      if (sample) {
        legend.push({ name: text.textContent.trim(), color: strokes[0].getAttribute('stroke'), dashed: strokes.length === 3 });
      }
      const t = text.getBoundingClientRect();
      texts.push(text.textContent.trim());
      if (!inside(t, box, 1)) overflows.push(figure.dataset.chart + ': ' + describe(text) + ' leaves its chart');
      // A label drawn on a white box (sweet spots) must fit that box.
      const back = text.previousElementSibling;
      // (The chart's own white background is a rect too: a label's box is one line high.)
      if (back && back.tagName === 'rect' && back.getAttribute('fill') === '#FFFFFF' && back.getBoundingClientRect().height < 40) {
        const label = back.getBoundingClientRect();
        labels += 1;
        if (!inside(t, label, 1)) overflows.push(figure.dataset.chart + ': ' + describe(text) + ' overflows its label box');
        // A label covers no data point (its markers).
        for (const dot of svg.querySelectorAll('circle')) {
          const d = dot.getBoundingClientRect();
          const x = (d.left + d.right) / 2, y = (d.top + d.bottom) / 2;
          if (x > label.left && x < label.right && y > label.top && y < label.bottom) {
            covered.push(figure.dataset.chart + ' ' + figure.dataset.workload + ': ' + describe(text) + ' covers a data point');
          }
        }
      }
    }
    const caption = figure.querySelector('figcaption');
    figures.push({ kind: figure.dataset.chart, workload: figure.dataset.workload, texts, legend, caption: caption ? caption.textContent : '' });
  }
  for (const cell of document.querySelectorAll('td, th')) {
    if (cell.scrollWidth > cell.clientWidth + 1) overflows.push(describe(cell) + ' overflows its cell');
  }
  for (const table of document.querySelectorAll('table')) {
    const main = document.querySelector('main').getBoundingClientRect();
    if (table.getBoundingClientRect().right > main.right + 1) overflows.push('a ' + table.className + ' table is wider than the page: ' + describe(table.rows[0]));
  }
  const summary = document.querySelector('section.summary');
  // The names the environment tables give their rows and columns.
  const keys = [];
  for (const cell of document.querySelectorAll('table.environment th, table.targets th, table.changes th')) keys.push(cell.textContent.trim());
  const result = {
    figures,
    overflows,
    covered,
    labels,
    keys,
    summary: summary ? summary.textContent : null,
    page_width: document.documentElement.scrollWidth,
    window_width: window.innerWidth,
  };
  const pre = document.createElement('pre');
  pre.id = 'iolab-checks';
  pre.textContent = JSON.stringify(result);
  document.body.appendChild(pre);
})();
