// The bench service's page: a form that starts runs, live charts fed by
// the run's server-sent events, the history with a compare view, and each
// run's HTML report. Everything comes from this origin's API; the token,
// when the service has one, goes in an Authorization header, so events
// are read with fetch (EventSource cannot send headers, and so does not
// reconnect for us: watch does). The service answers a request with the
// token in its header with an HttpOnly cookie for the report frame,
// which no script here can read or set.
"use strict";
(function () {
  var root = document.documentElement;
  window.addEventListener("error", function () {
    root.dataset.jsErrors = String(Number(root.dataset.jsErrors || "0") + 1);
  });
  var $ = function (id) { return document.getElementById(id); };
  var token = sessionStorage.getItem("allot-bench-token") || "";
  var live = { id: null, abort: null, t: [], ops: [], p99: [] };
  var ticked = [];

  function headers(json) {
    var h = {};
    if (token) h["Authorization"] = "Bearer " + token;
    if (json) h["Content-Type"] = "application/json";
    return h;
  }
  function api(method, path, body) {
    return fetch(path, { method: method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body) })
      .then(function (r) {
        if (r.status === 401) { $("token-box").hidden = false; setStatus("this service needs its token", true); }
        return r.text().then(function (text) {
          var data = null;
          try { data = JSON.parse(text); } catch (e) { data = { error: "invalid", detail: text }; }
          if (!r.ok) { var err = new Error((data && data.detail) || r.statusText); err.status = r.status; throw err; }
          return data;
        });
      });
  }
  function setStatus(text, bad) { var s = $("status"); s.textContent = text; s.className = bad ? "error" : "muted"; }
  function fmt(v, digits) {
    if (v === undefined || v === null || isNaN(v)) return "–";
    if (Number.isInteger(v) && v < 1000) return String(v);
    if (v >= 1000) return Math.round(v).toLocaleString("en");
    return Number(v).toFixed(digits === undefined ? 2 : digits);
  }
  function text(tag, s, cls) { var e = document.createElement(tag); e.textContent = s; if (cls) e.className = cls; return e; }

  // Charts.
  function chart(el, label, color) {
    var width = Math.max(320, el.clientWidth || 560);
    return new uPlot({
      width: width, height: 220,
      scales: { x: { time: false } },
      axes: [{ label: "seconds" }, {}],
      series: [{ label: "t" }, { label: label, stroke: color, width: 2, fill: color + "22" }]
    }, [[], []], el);
  }
  var opsChart = chart($("chart-ops"), "ops/s", "#2563eb");
  var p99Chart = chart($("chart-p99"), "p99 ms", "#dc2626");
  function drawLive() {
    opsChart.setData([live.t, live.ops]);
    p99Chart.setData([live.t, live.p99]);
    root.dataset.livePoints = String(live.t.length);
  }

  // Live run: server-sent events read from a fetch stream. A stream that
  // drops before the run's end (a proxy restarting, a laptop waking up,
  // the service restarted) is opened again after 1, 2, 4 ... 30 s, and
  // one the service ended because the page fell behind its samples at
  // once (see reconnect), with
  // the last sample's id as Last-Event-ID: the service sends only the
  // samples after it, or "reset" and the whole series when that sample
  // has since been merged into an older point.
  var reconnectMaxMS = 30000;
  // The live chart keeps the newest livePointsMax points: as many as a
  // run's series holds (seriesRecentMax + seriesOlderMax), so that the
  // replay a stream starts with fits whole. A page watching a long run
  // then shows its last livePointsMax samples, no longer all it was sent
  // since it opened; a reload shows the whole run, older points merged.
  var livePointsMax = 600;
  function watch(id) {
    if (live.abort) live.abort.abort();
    clearTimeout(live.retry);
    live = { id: id, abort: new AbortController(), t: [], ops: [], p99: [], lastID: "", ended: false, retries: 0, retry: null };
    drawLive();
    $("live-title").textContent = id;
    $("live-cancel").disabled = false;
    root.dataset.liveRun = id;
    root.dataset.liveState = "running";
    root.dataset.liveReconnects = "0";
    root.dataset.liveCatchUps = "0";
    stream(live);
    pollProgress(id);
  }
  function stream(w) {
    w.behind = false; w.fresh = 0;
    var h = headers(false);
    if (w.lastID) h["Last-Event-ID"] = w.lastID;
    fetch("/v1/runs/" + w.id + "/events", { headers: h, signal: w.abort.signal }).then(function (r) {
      if (!r.ok || !r.body) { var err = new Error("events: " + r.status); err.status = r.status; throw err; }
      var reader = r.body.getReader(), dec = new TextDecoder(), buf = "";
      function pump() {
        return reader.read().then(function (chunk) {
          if (chunk.done) return;
          buf += dec.decode(chunk.value, { stream: true });
          var i;
          while ((i = buf.indexOf("\n\n")) >= 0) { onEvent(w, buf.slice(0, i)); buf = buf.slice(i + 2); }
          return pump();
        });
      }
      return pump();
    }).then(function () { reconnect(w, null); }, function (e) { if (e.name !== "AbortError") reconnect(w, e); });
  }
  function reconnect(w, e) {
    if (w !== live || w.ended) return;
    // The service ended the stream because the page fell behind its
    // samples (its comment says so): nothing failed, the samples after the
    // last one are asked for at once. Only after a stream that brought
    // samples: one that ends so at once is waited for as after a drop.
    if (!e && w.behind && w.fresh > 0) {
      w.retries = 0;
      root.dataset.liveCatchUps = String(Number(root.dataset.liveCatchUps || "0") + 1);
      setStatus("run " + w.id + ": catching up with the live stream", false);
      stream(w);
      return;
    }
    // A run that is gone, a token refused or a request refused does not
    // get better by asking again.
    if (e && (e.status === 400 || e.status === 401 || e.status === 404)) { setStatus(String(e.message), true); return; }
    var delay = Math.min(reconnectMaxMS, 1000 * Math.pow(2, w.retries));
    w.retries++;
    root.dataset.liveReconnects = String(Number(root.dataset.liveReconnects || "0") + 1);
    setStatus("the event stream of run " + w.id + " dropped" + (e ? " (" + e.message + ")" : "") + "; reconnecting in " + delay / 1000 + " s", true);
    w.retry = setTimeout(function () { if (w === live && !w.ended) stream(w); }, delay);
  }
  function onEvent(w, block) {
    if (w !== live) return;
    var name = "message", data = "", id = "";
    block.split("\n").forEach(function (line) {
      if (line.indexOf("event: ") === 0) name = line.slice(7);
      else if (line.indexOf("data: ") === 0) data += line.slice(6);
      else if (line.indexOf("id: ") === 0) id = line.slice(4);
      else if (line.indexOf(": more than ") === 0 && line.indexOf("behind the live stream") > 0) w.behind = true;
    });
    if (!data) return;
    var ev = JSON.parse(data);
    if (name === "reset") {
      live.t = []; live.ops = []; live.p99 = [];
      drawLive();
    } else if (name === "sample") {
      if (id) w.lastID = id;
      w.fresh++;
      if (w.retries) { w.retries = 0; setStatus("run " + w.id + ": event stream resumed", false); }
      live.t.push(ev.t); live.ops.push(ev.ops_per_sec); live.p99.push(ev.p99_ms);
      if (live.t.length > livePointsMax) {
        var over = live.t.length - livePointsMax;
        live.t.splice(0, over); live.ops.splice(0, over); live.p99.splice(0, over);
      }
      drawLive();
      $("live-figures").textContent = ev.store + ": " + fmt(ev.ops_per_sec, 0) + " ops/s, p99 " + fmt(ev.p99_ms, 3) + " ms, " + ev.errors + " errors, " + ev.ops_done + " of " + ev.ops_total + " ops";
    } else if (name === "end") {
      w.ended = true;
      root.dataset.liveState = ev.state;
      setStatus("run " + ev.id + " " + ev.state, ev.state === "failed");
      $("live-title").textContent = ev.id + " — " + ev.state + (ev.error ? ": " + ev.error : "");
      $("live-cancel").disabled = true;
      refreshHistory();
    }
  }
  function pollProgress(id) {
    api("GET", "/v1/runs/" + id).then(function (rec) {
      $("live-progress").firstElementChild.style.width = (100 * (rec.progress.fraction || 0)).toFixed(1) + "%";
      if (rec.state === "queued" || rec.state === "running") {
        if (live.id === id) setTimeout(function () { pollProgress(id); }, 1000);
      } else {
        $("live-progress").firstElementChild.style.width = rec.state === "done" ? "100%" : $("live-progress").firstElementChild.style.width;
      }
    }).catch(function () {
      // The service may be restarting, as when the event stream drops.
      if (live.id === id && !live.ended) setTimeout(function () { pollProgress(id); }, 3000);
    });
  }

  // History: the newest historyPage runs, and historyPage more at each
  // click of "older runs". A refresh asks for as many as are shown,
  // following the service's next page by page (a page holds at most
  // historyPageMax): the service pages by a run's id, so runs that come
  // meanwhile shift nothing, and the table has no gap and no run twice.
  var historyPage = 100, historyPageMax = 1000, historyWanted = historyPage;
  function fetchHistory() {
    var runs = [];
    function page(before) {
      var q = "?limit=" + Math.min(historyWanted - runs.length, historyPageMax);
      if (before) q += "&before=" + encodeURIComponent(before);
      return api("GET", "/v1/runs" + q).then(function (data) {
        runs = runs.concat(data.runs);
        if (data.next && runs.length < historyWanted) return page(data.next);
        return { runs: runs, total: data.total, more: !!data.next };
      });
    }
    return page("");
  }
  function refreshHistory() {
    return fetchHistory().then(function (data) {
      var body = $("history-table").tBodies[0];
      body.textContent = "";
      data.runs.forEach(function (run) {
        var tr = document.createElement("tr");
        tr.dataset.id = run.id; tr.dataset.state = run.state;
        var tick = document.createElement("input"); tick.type = "checkbox"; tick.checked = ticked.indexOf(run.id) >= 0;
        tick.addEventListener("change", function () { toggle(run.id, tick.checked); });
        var c = document.createElement("td"); c.appendChild(tick); tr.appendChild(c);
        tr.appendChild(text("td", run.id, "mono"));
        var st = text("td", ""); st.appendChild(text("span", run.state, "pill " + run.state)); if (run.error) st.title = run.error;
        if (run.concurrent && run.concurrent.length) {
          st.appendChild(text("span", " ‖", "muted"));
          st.title = (st.title ? st.title + "; " : "") + "ran alongside " + run.concurrent.join(", ") + ": they shared the machine";
        }
        tr.appendChild(st);
        tr.appendChild(text("td", "bench " + run.args.join(" "), "mono small"));
        var rs = run.results || [];
        tr.appendChild(text("td", rs.map(function (r) { return r.store + " " + fmt(r.ops_per_sec, 0); }).join(" · "), "num"));
        tr.appendChild(text("td", rs.map(function (r) { return fmt(r.p99_ms, 3); }).join(" · "), "num"));
        tr.appendChild(text("td", rs.map(function (r) { return r.cpu_us_per_op ? fmt(r.cpu_us_per_op, 1) : "–"; }).join(" · "), "num"));
        var act = document.createElement("td");
        if (rs.length) { var b = text("button", "report"); b.type = "button"; b.addEventListener("click", function () { openReport("/v1/runs/" + run.id + "/report"); }); act.appendChild(b); }
        if (run.state === "running" || run.state === "queued") { var w = text("button", "watch"); w.type = "button"; w.addEventListener("click", function () { watch(run.id); }); act.appendChild(w); }
        tr.appendChild(act);
        body.appendChild(tr);
      });
      $("history-more").hidden = !data.more;
      $("history-count").textContent = data.runs.length < data.total ? data.runs.length + " of " + data.total + " runs" : "";
      root.dataset.historyRows = String(data.runs.length);
      root.dataset.historyTotal = String(data.total);
      return data.runs;
    });
  }
  function toggle(id, on) {
    ticked = ticked.filter(function (x) { return x !== id; });
    if (on) ticked.push(id);
    while (ticked.length > 2) ticked.shift();
    Array.prototype.forEach.call($("history-table").tBodies[0].rows, function (tr) { tr.cells[0].firstChild.checked = ticked.indexOf(tr.dataset.id) >= 0; });
    $("compare").disabled = ticked.length !== 2;
  }
  function compare() {
    var ids = ticked.slice();
    Promise.all(ids.map(function (id) { return api("GET", "/v1/runs/" + id); })).then(function (recs) {
      var t = $("compare-table"); t.textContent = "";
      var head = document.createElement("tr");
      ["", recs[0].id, recs[1].id, "B / A"].forEach(function (h) { head.appendChild(text("th", h)); });
      t.appendChild(head);
      var n = Math.max(recs[0].results.length, recs[1].results.length);
      var rows = [["ops/s", function (r) { return r.ops_per_sec; }], ["p50 ms", function (r) { return r.latency_ms.p50; }],
        ["p99 ms", function (r) { return r.latency_ms.p99; }], ["p99.9 ms", function (r) { return r.latency_ms.p999; }],
        ["errors", function (r) { return r.errors; }], ["CPU µs/op", function (r) { return r.server ? r.server.cpu_us_per_op : NaN; }],
        ["server MB", function (r) { return r.server ? r.server.rss_peak_bytes / 1048576 : NaN; }]];
      for (var i = 0; i < n; i++) {
        var a = recs[0].results[i], b = recs[1].results[i];
        var sub = document.createElement("tr");
        sub.appendChild(text("th", "store run " + (i + 1)));
        sub.appendChild(text("th", a ? a.store + ", " + a.workload.name + ", " + a.workers + " workers, " + a.status : "–"));
        sub.appendChild(text("th", b ? b.store + ", " + b.workload.name + ", " + b.workers + " workers, " + b.status : "–"));
        sub.appendChild(text("th", ""));
        t.appendChild(sub);
        rows.forEach(function (row) {
          var va = a ? row[1](a) : NaN, vb = b ? row[1](b) : NaN;
          var tr = document.createElement("tr");
          tr.appendChild(text("td", row[0]));
          tr.appendChild(text("td", fmt(va, 3), "num")); tr.appendChild(text("td", fmt(vb, 3), "num"));
          tr.appendChild(text("td", va > 0 && vb >= 0 ? (vb / va).toFixed(2) + "×" : "–", "num"));
          t.appendChild(tr);
        });
      }
      $("compare-view").hidden = false;
      root.dataset.compared = ids.join(",");
    }).catch(function (e) { setStatus(e.message, true); });
  }
  // The report opens from its own URL, so that its own policy and
  // scripts apply (a blob: made here would inherit this page's policy and
  // its scripts would be refused); the token reaches it as a cookie.
  function openReport(path) {
    $("report-frame").src = path;
    $("report").hidden = false;
    $("report").scrollIntoView();
  }

  // The form.
  function submit(e) {
    e.preventDefault();
    $("form-error").textContent = "";
    var body = {};
    var stores = Array.prototype.filter.call($("f-stores").options, function (o) { return o.selected; }).map(function (o) { return o.value; });
    if (stores.length) body.stores = stores;
    body.workload = $("f-workload").value;
    [["preset", "f-preset", false], ["ops", "f-ops", true], ["workers", "f-workers", true], ["durability", "f-durability", false],
      ["duration", "f-duration", false], ["rate", "f-rate", true]].forEach(function (f) {
      var v = $(f[1]).value.trim();
      if (v !== "") body[f[0]] = f[2] ? Number(v) : v;
    });
    var extra = $("f-extra").value.trim();
    if (extra) {
      try { Object.assign(body, JSON.parse(extra)); } catch (err) { $("form-error").textContent = "more parameters: not JSON: " + err.message; return; }
    }
    api("POST", "/v1/runs", body).then(function (r) {
      setStatus("run " + r.id + " " + r.state, false);
      watch(r.id);
      refreshHistory();
    }).catch(function (err) { $("form-error").textContent = err.message; });
  }

  $("run-form").addEventListener("submit", submit);
  $("compare").addEventListener("click", compare);
  $("history-more").addEventListener("click", function () { historyWanted += historyPage; refreshHistory().catch(function (e) { setStatus(e.message, true); }); });
  $("compare-report").addEventListener("click", function () { openReport("/v1/report?runs=" + ticked.map(encodeURIComponent).join(",")); });
  $("report-close").addEventListener("click", function () { $("report").hidden = true; });
  $("live-cancel").addEventListener("click", function () { if (live.id) api("DELETE", "/v1/runs/" + live.id).catch(function (e) { setStatus(e.message, true); }); });
  $("token").value = token;
  $("token").addEventListener("change", function () { token = $("token").value; sessionStorage.setItem("allot-bench-token", token); start(); });

  var historyTimer = null;
  function start() {
    return api("GET", "/v1/info").then(function (info) {
      var sel = $("f-stores"); sel.textContent = "";
      (info.stores || []).forEach(function (s) { var o = text("option", s); o.value = s; o.selected = s === "embedded"; sel.appendChild(o); });
      var wl = $("f-workload"); wl.textContent = "";
      (info.workloads || []).forEach(function (s) { var o = text("option", s); o.value = s; wl.appendChild(o); });
      setStatus("ready", false);
      return refreshHistory();
    }).then(function (runs) {
      var running = (runs || []).filter(function (r) { return r.state === "running"; })[0];
      if (running) watch(running.id);
      root.dataset.ready = "true";
      // Once: start runs again at every change of the token.
      if (!historyTimer) historyTimer = setInterval(refreshHistory, 3000);
    }).catch(function (e) { setStatus(e.message, true); root.dataset.ready = "true"; });
  }
  start();
})();
