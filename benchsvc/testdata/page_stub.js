// Just enough of a browser's document for the service's page.js to run in
// node (the page harnesses): elements that keep what the page sets on
// them and the handlers it adds.
"use strict";

function element() {
  const el = {
    textContent: "", className: "", hidden: false, disabled: false, value: "", checked: false, src: "",
    title: "", type: "", clientWidth: 560, dataset: {}, style: {}, options: [], rows: [], cells: [],
    firstElementChild: { style: {} }, firstChild: { checked: false },
    handlers: {},
    addEventListener(name, fn) { this.handlers[name] = fn; }, appendChild(c) { this.rows.push(c); return c; }, scrollIntoView() {}
  };
  el.tBodies = [el];
  return el;
}

// newDocument returns a document and its root element.
function newDocument() {
  const elements = {};
  const root = element();
  const document = {
    documentElement: root,
    getElementById(id) { return elements[id] || (elements[id] = element()); },
    createElement() { return element(); }
  };
  return { document, root };
}

module.exports = { newDocument };
