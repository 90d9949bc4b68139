// Runs first, before any other script: records every request the
// Content-Security-Policy refused and every script error, so that a test
// (or a curious reader, in the console) can see that the page stayed
// offline and drew without failing.
window.allotGuard = { violations: [], errors: [] };
document.addEventListener("securitypolicyviolation", function (e) {
  window.allotGuard.violations.push(e.violatedDirective + " " + e.blockedURI);
});
window.addEventListener("error", function (e) {
  window.allotGuard.errors.push(String(e.message));
});
