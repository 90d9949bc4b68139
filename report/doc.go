// Package report turns a bench results file into one self-contained HTML
// page: the comparison table, throughput over time, the latency percentile
// spectrum (HDR style), sweep curves, the check outcome of every run, the
// environment, and the published figures for the same workload beside the
// measured ones.
//
// Invariants:
//   - the page makes no network request when opened: the charting library,
//     its stylesheet and the page's own script are inlined, and a
//     Content-Security-Policy (default-src 'none', scripts allowed only by
//     their SHA-256 hashes) makes the browser refuse anything else;
//   - every value that comes from the results file reaches the page through
//     html/template (markup) or json.Marshal with HTML escaping (the chart
//     data, in a non-executed application/json block), never by string
//     concatenation, so a store name or error message cannot inject markup
//     or script;
//   - every figure is computed from the results file; the only figures not
//     measured are the published ones, and the page labels them as published
//     elsewhere, on other hardware.
//
// It must never: fetch anything, run a bench, or hide a failed check (a run
// whose check failed is shown in red in the table, the banner and the
// checks section).
package report
