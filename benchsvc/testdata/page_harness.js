// Runs the service's page.js in node against a real service, with just
// enough of a document for it to run: its fetches, its event stream
// reading and its timers are the page's own. Usage:
//
//	node page_harness.js <service URL> <page.js>
//
// It waits for the run the page watches to end and its progress bar to
// fill (or 10 s more), changes the token twice as a user would, then
// prints one JSON line: the live chart's x values (seconds), the most
// points the page ever gave a chart (the length of its longest array),
// the run's end state as the page saw it, its reconnect count (after a
// drop) and catch-up count (after the service ended a stream behind), the
// progress bar's width, and how many history timers the page has set. A
// page that never sees the end within 30 s prints {"error": ...}.
"use strict";
const fs = require("fs");
const vm = require("vm");
const [base, pagePath] = process.argv.slice(2);

const { document, root } = require("./page_stub.js").newDocument();
let chartX = [];
let pointsMax = 0;
function uPlot() {
  this.setData = function (data) {
    chartX = data[0].slice();
    data.forEach((a) => { pointsMax = Math.max(pointsMax, a.length); });
  };
}
const storage = {};
let historyTimers = 0;
const context = {
  document, uPlot, console, TextDecoder, AbortController,
  window: { addEventListener() {} },
  sessionStorage: { getItem: (k) => (k in storage ? storage[k] : null), setItem: (k, v) => { storage[k] = String(v); } },
  setTimeout, clearTimeout, clearInterval,
  setInterval: (fn, ms) => { if (ms === 3000) historyTimers++; return setInterval(fn, ms); },
  fetch: (path, opts) => fetch(base + path, opts)
};
vm.createContext(context);
vm.runInContext(fs.readFileSync(pagePath, "utf8"), context, { filename: "page.js" });

const started = Date.now();
let ended = 0;
const poll = setInterval(() => {
  const state = root.dataset.liveState;
  const progress = document.getElementById("live-progress").firstElementChild.style.width || "";
  if (state && state !== "running" && !ended) ended = Date.now();
  if (ended && (progress === "100%" || Date.now() - ended > 10000)) {
    clearInterval(poll);
    const token = document.getElementById("token");
    token.value = "one"; token.handlers.change();
    token.value = ""; token.handlers.change();
    setTimeout(() => {
      console.log(JSON.stringify({ t: chartX, pointsMax, state, reconnects: Number(root.dataset.liveReconnects || 0), catchUps: Number(root.dataset.liveCatchUps || 0), progress, historyTimers }));
      process.exit(0);
    }, 500);
    return;
  }
  if (Date.now() - started > 30000) {
    console.log(JSON.stringify({ error: "the page did not see the run end in 30 s", state: state || "", status: document.getElementById("status").textContent, t: chartX }));
    process.exit(0);
  }
}, 20);
