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
    for (const text of svg.querySelectorAll('text')) {
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
    figures.push({ kind: figure.dataset.chart, workload: figure.dataset.workload, texts });
  }
  for (const cell of document.querySelectorAll('td, th')) {
    if (cell.scrollWidth > cell.clientWidth + 1) overflows.push(describe(cell) + ' overflows its cell');
  }
  for (const table of document.querySelectorAll('table')) {
    const main = document.querySelector('main').getBoundingClientRect();
    if (table.getBoundingClientRect().right > main.right + 1) overflows.push('a ' + table.className + ' table is wider than the page: ' + describe(table.rows[0]));
  }
  const summary = document.querySelector('section.summary');
  const result = {
    figures,
    overflows,
    covered,
    labels,
    summary: summary ? summary.textContent : null,
    page_width: document.documentElement.scrollWidth,
    window_width: window.innerWidth,
  };
  const pre = document.createElement('pre');
  pre.id = 'iolab-checks';
  pre.textContent = JSON.stringify(result);
  document.body.appendChild(pre);
})();
