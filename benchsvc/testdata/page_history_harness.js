// Runs the service's page.js in node against a real service, with just
// enough of a document for it to run (as page_harness.js does), and
// looks at its history. Usage:
//
//	node page_history_harness.js <service URL> <page.js>
//
// It waits for the page's first history, clicks "older runs" and waits
// for the longer history, then prints one JSON line: the rows shown and
// whether "older runs" was offered, before and after the click, and the
// history's total as the page read it. A page that does not get there
// within 20 s prints {"error": ...}.
"use strict";
const fs = require("fs");
const vm = require("vm");
const [base, pagePath] = process.argv.slice(2);

const { document, root } = require("./page_stub.js").newDocument();
function uPlot() { this.setData = function () {}; }
const context = {
  document, uPlot, console, TextDecoder, AbortController,
  window: { addEventListener() {} },
  sessionStorage: { getItem: () => null, setItem() {} },
  setTimeout, clearTimeout, setInterval, clearInterval,
  fetch: (path, opts) => fetch(base + path, opts)
};
vm.createContext(context);
vm.runInContext(fs.readFileSync(pagePath, "utf8"), context, { filename: "page.js" });

const more = document.getElementById("history-more");
const started = Date.now();
let first = null;
const poll = setInterval(() => {
  const rows = Number(root.dataset.historyRows || 0);
  if (!first && root.dataset.ready === "true" && rows > 0) {
    first = { rows, more: !more.hidden };
    if (more.handlers.click) more.handlers.click();
    return;
  }
  if (first && rows > first.rows) {
    clearInterval(poll);
    console.log(JSON.stringify({ rows: first.rows, more: first.more, rowsAfter: rows, moreAfter: !more.hidden, total: Number(root.dataset.historyTotal || 0) }));
    process.exit(0);
  }
  if (Date.now() - started > 20000) {
    console.log(JSON.stringify({ error: "the page's history did not grow in 20 s", first, rows, status: document.getElementById("status").textContent }));
    process.exit(0);
  }
}, 20);
