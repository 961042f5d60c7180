// Renders Mermaid diagrams as a browser would, with the pinned Mermaid (package.json here),
// in a DOM of jsdom's: mermaid.render parses the text, lays the diagram out and draws its SVG,
// the steps at which a page shows "Syntax error in text" or a broken chart instead.
//
//   node tests/js/mermaid/render.mjs MODULES < diagrams.json > results.json
//
// MODULES is the folder `make mermaid` installed the packages into (.cache/node/mermaid).
// stdin: a JSON list of diagram texts; stdout: one result per diagram, in order:
// {"ok": true, "type": "xychart", "svg": "<svg ...>"} or {"ok": false, "error": "..."}.
// jsdom lays no text out, so every text is measured as 8 px per character, 16 px high.
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
if (!modules) {
  process.stderr.write("usage: node render.mjs MODULES < diagrams.json\n");
  process.exit(2);
}
const require = createRequire(join(modules, "package.json"));
const { JSDOM } = require("jsdom");
const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
const win = dom.window;
globalThis.window = win;
globalThis.document = win.document;
for (const name of ["Element", "HTMLElement", "SVGElement", "Node", "DOMParser",
  "MutationObserver", "CSSStyleSheet", "getComputedStyle", "Image"]) {
  if (!(name in globalThis)) globalThis[name] = win[name];
}
const measure = (el) => 8 * (el.textContent || "").length;
win.SVGElement.prototype.getBBox = function () {
  return { x: 0, y: 0, width: measure(this), height: 16 };
};
win.SVGElement.prototype.getComputedTextLength = function () {
  return measure(this);
};

const entry = require.resolve("mermaid").replace(/mermaid\.core\.(c|m)?js$/, "mermaid.core.mjs");
const { default: mermaid } = await import(pathToFileURL(entry).href);
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = [];
let n = 0;
for (const text of JSON.parse(input)) {
  n += 1;
  try {
    const parsed = await mermaid.parse(text);
    const { svg } = await mermaid.render(`diagram${n}`, text);
    results.push({ ok: true, type: parsed.diagramType, svg });
  } catch (err) {
    results.push({ ok: false, error: String((err && err.message) || err) });
  }
  for (const leftover of win.document.querySelectorAll("body > div, body > svg")) leftover.remove();
}
process.stdout.write(JSON.stringify(results));
