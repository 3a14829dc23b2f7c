// The step-through element's own logic under Node's test runner (node --test, no dependencies): where a step, a
// cell, a key or new data from the server leaves the learner, and what the matrices' HTML holds.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  askFor,
  clampPosition,
  entryKey,
  equationParts,
  followingPanel,
  escapeHtml,
  inBlock,
  keyAction,
  moveStage,
  nextPosition,
  practiceHides,
  practiceState,
  shownMissing,
  stagesToAsk,
  tableHtml,
  unlocked,
  withPosition,
} from "./stepper.js";

const panel = (rows, cols, extra = {}) => ({
  rows, cols, row_title: "query token", col_title: "key token", caption_html: "<b>S</b>: 2 × 3",
  text: rows.map((_r, i) => cols.map((_c, j) => `${i}.${j}`)),
  fill: rows.map(() => cols.map(() => "#ffffff")), dark: rows.map(() => cols.map(() => 0)),
  head: null, explained: true, ...extra,
});

const data = {
  order: ["inputs", "scores", "weights"], token: 3, num_heads: 0,
  position: { stage: "scores", row: 0, col: 0, head: 0 },
  stages: {
    inputs: { panels: [panel(["1 I", "2 Like"], ["d1", "d2", "d3", "d4"])] },
    scores: { panels: [panel(["1 I", "2 Like"], ["1 I", "2 Like"])] },
    weights: { panels: [panel(["1 I", "2 Like"], ["1 I", "2 Like"])] },
  },
};

test("Next and Previous stay inside the stages", () => {
  assert.equal(moveStage(data.order, "scores", 1), "weights");
  assert.equal(moveStage(data.order, "weights", 1), "weights");
  assert.equal(moveStage(data.order, "inputs", -1), "inputs");
  assert.equal(moveStage(data.order, "unknown", 1), "scores");
});

test("an entry is kept inside the explained panel and the heads", () => {
  assert.deepEqual(clampPosition(data.stages.inputs, 5, 9, 0, 0), { row: 1, col: 3, head: 0 });
  assert.deepEqual(clampPosition(data.stages.scores, -1, 1, 4, 2), { row: 0, col: 1, head: 1 });
  const noEntry = { panels: [panel(["a"], ["b"], { explained: false })] };
  assert.deepEqual(clampPosition(noEntry, 3, 3, 0, 0), { row: 3, col: 3, head: 0 });
  const perHead = { panels: [panel(["a"], ["b"], { head: 0 }), panel(["a", "b"], ["c", "d"], { head: 1 })] };
  assert.deepEqual(clampPosition(perHead, 1, 1, 1, 2), { row: 1, col: 1, head: 1 });
  assert.deepEqual(clampPosition(perHead, 1, 1, 0, 2), { row: 0, col: 0, head: 0 });
});

test("new data keeps where the learner stepped unless the server moved it on purpose", () => {
  const stepped = { stage: "weights", row: 1, col: 1, head: 0, token: 3 };
  assert.deepEqual(nextPosition(data, stepped), stepped);  // a setting changed: the same token, the learner's step
  assert.deepEqual(nextPosition({ ...data, token: 4 }, stepped),  // a link, the teacher, a reset: the server's
    { stage: "scores", row: 0, col: 0, head: 0, token: 4 });
  assert.deepEqual(nextPosition(data, undefined), { stage: "scores", row: 0, col: 0, head: 0, token: 3 });
  const shorter = { ...data, stages: { ...data.stages, weights: { panels: [panel(["1 I"], ["1 I"])] } } };
  assert.deepEqual(nextPosition(shorter, stepped), { stage: "weights", row: 0, col: 0, head: 0, token: 3 });
});

test("the link holds the stage and the entry, every other parameter kept", () => {
  const fields = { stage: "self_attention.stage", row: "entry_row", col: "entry_col", head: null };
  const href = withPosition("http://h/self-attention?d_k=4&entry_row=0", fields,
    { stage: "weights", row: 2, col: 1, head: 0 });
  const query = new URL(href).searchParams;
  assert.equal(query.get("d_k"), "4");
  assert.equal(query.get("self_attention.stage"), "weights");
  assert.equal(query.get("entry_row"), "2");
  assert.equal(query.get("entry_col"), "1");
  assert.equal(query.has("head"), false);
  const withHead = withPosition("http://h/multi-head", { ...fields, head: "head" }, { stage: "s", row: 0, col: 0, head: 1 });
  assert.equal(new URL(withHead).searchParams.get("head"), "1");
});

test("the arrow keys move the entry, PageUp / PageDown and [ ] the stage; modifiers are the browser's", () => {
  assert.deepEqual(keyAction({ key: "ArrowDown" }), ["row", 1]);
  assert.deepEqual(keyAction({ key: "ArrowLeft" }), ["col", -1]);
  assert.deepEqual(keyAction({ key: "PageDown" }), ["stage", 1]);
  assert.deepEqual(keyAction({ key: "[" }), ["stage", -1]);
  assert.equal(keyAction({ key: "ArrowDown", altKey: true }), null);
  assert.equal(keyAction({ key: "a" }), null);
});

test("a matrix is a table: escaped labels and numbers, headers for screen readers, the entry framed", () => {
  const p = panel(["1 <b>", "2 x&y"], ["1 <b>", "2 x&y", "3"]);
  const html = tableHtml(p, { row: 1, col: 2, head: 0 }, { row: "row", column: "column" });
  assert.match(html, /<caption><b>S<\/b>: 2 × 3<\/caption>/);  // the caption is the server's own HTML
  assert.match(html, /<th scope="row">1 &lt;b&gt;<\/th>/);
  assert.match(html, /<th scope="col">2 x&amp;y<\/th>/);
  assert.equal((html.match(/aria-pressed="true"/g) ?? []).length, 1);
  assert.match(html, /class="framed"><button type="button" class="cell" data-row="1" data-col="2"/);
  assert.match(html, /aria-label="row 2 x&amp;y, column 3: 1\.2"/);
  assert.doesNotMatch(html, /<b>"/);
  const shown = tableHtml({ ...p, explained: false }, { row: 0, col: 0, head: 0 }, { row: "r", column: "c" });
  assert.doesNotMatch(shown, /<button/);  // a panel that explains nothing has no buttons
});

test("entry keys and escaping", () => {
  assert.equal(entryKey(1, 2, 0), "1,2,0");
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
});

test("what the element asks the server for: a stage sent in part once, a large stage's row once", () => {
  const at = { stage: "scores", row: 2, col: 0, head: 0 };
  assert.equal(askFor({ has_entry: false, entries: null }, at), null);  // a stage that explains no entry
  assert.equal(askFor({ has_entry: true, entries: null }, at), "scores");
  assert.equal(askFor({ has_entry: true, entries: { "0,0,0": "x" }, partial: true }, at), "scores");
  assert.equal(askFor({ has_entry: true, entries: { "0,0,0": "x" } }, at), null);  // all of it is there
  const large = { has_entry: true, by_row: true, partial: true, entries: {}, rows_loaded: [0, 2] };
  assert.equal(askFor(large, at), null);  // its row 3 is there
  assert.equal(askFor(large, { ...at, row: 1 }), "scores:1");
  assert.equal(askFor({ ...large, rows_loaded: undefined }, at), "scores:2");
});

test("a wide entry is cut at its top-level equals signs only", () => {
  assert.deepEqual(equationParts("{s}_{1,2} = \\sum_{l=1}^{d_{k}} q k = 0.3 \\cdot \\left(-1.2\\right) = -0.41"),
    ["{s}_{1,2}", "\\sum_{l=1}^{d_{k}} q k", "0.3 \\cdot \\left(-1.2\\right)", "-0.41"]);
  assert.deepEqual(equationParts("\\left(a = b\\right) = c"), ["\\left(a = b\\right)", "c"]);
  assert.deepEqual(equationParts("\\{x = 1\\} = 2"), ["\\{x", "1\\}", "2"]);  // \\{ is a printed brace, not a group
  assert.deepEqual(equationParts("x"), ["x"]);
});

test("the shown stage and its neighbours are asked for once: Next and Previous find their entries sent", () => {
  const stage = (extra = {}) => ({ has_entry: true, entries: null, ...extra });
  const partial = stage({ entries: { "0,0,0": "x" }, partial: true });
  const data = { order: ["a", "b", "c", "d"], stages: { a: stage(), b: partial, c: stage(), d: stage({ has_entry: false }) } };
  const at = { stage: "b", row: 0, col: 0, head: 0 };
  assert.deepEqual(stagesToAsk(data, at, new Set()), ["b", "c", "a"]);
  assert.deepEqual(stagesToAsk(data, at, new Set(["b", "c"])), ["a"]);
  assert.deepEqual(stagesToAsk(data, { ...at, stage: "c" }, new Set()), ["c", "b"]);  // d explains nothing
  assert.deepEqual(stagesToAsk(data, { ...at, stage: "a" }, new Set()), ["a", "b"]);
  // in a class: every stage, the nearest first (the next before the previous)
  const inClass = { ...data, order: ["a", "b", "c", "d", "e"], stages: { ...data.stages, e: stage() }, report: true };
  assert.deepEqual(stagesToAsk(inClass, { ...at, stage: "c" }, new Set()), ["c", "b", "e", "a"]);
  assert.deepEqual(stagesToAsk(inClass, at, new Set(["a"])), ["b", "c", "e"]);
});

test("only a missing shown entry is asked for at once; the neighbours wait for a pause", () => {
  const data = { stages: {
    scores: { has_entry: true, entries: { "1,2,0": "x" }, partial: true },
    mask: { has_entry: false, entries: null },
    weights: { has_entry: true, entries: null },
  } };
  assert.equal(shownMissing(data, { stage: "scores", row: 1, col: 2, head: 0 }), false);
  assert.equal(shownMissing(data, { stage: "scores", row: 1, col: 3, head: 0 }), true);
  assert.equal(shownMissing(data, { stage: "scores", row: 1, col: 2, head: 1 }), true);  // another head's
  assert.equal(shownMissing(data, { stage: "mask", row: 0, col: 0, head: 0 }), false);  // explains nothing
  assert.equal(shownMissing(data, { stage: "weights", row: 0, col: 0, head: 0 }), true);
});

test("a panel that follows the entry shows its head's row's, clamped; another panel is itself", () => {
  const a = { rows: ["a"] }, b = { rows: ["b"] }, c = { rows: ["c"] };
  const follows = { head: null, explained: false, by_entry: [[a, b], [c]] };
  assert.deepEqual(followingPanel(follows, { row: 1, head: 0 }), [b, "0,1"]);
  assert.deepEqual(followingPanel(follows, { row: 1, head: 1 }), [c, "1,0"]);  // head 2 has one row
  assert.deepEqual(followingPanel(follows, { row: 0, head: 5 }), [c, "1,0"]);
  assert.deepEqual(followingPanel(follows, { row: -1 }), [a, "0,0"]);
  assert.deepEqual(followingPanel(a, { row: 3, head: 0 }), [a, ""]);
});

test("an aligned block is one part: its equals signs are its own lines", () => {
  const latex = "\\begin{aligned} q' &= a \\\\ &= b \\end{aligned}\\qquad \\varphi = m \\theta = 0.03";
  assert.deepEqual(equationParts(latex),
    ["\\begin{aligned} q' &= a \\\\ &= b \\end{aligned}\\qquad \\varphi", "m \\theta", "0.03"]);
});

test("practice mode: the numbers stay hidden until the entry is answered right or its solution shown", () => {
  const stage = { has_entry: true, panels: [], entries: {}, exercises: {
    "0,0,0": { id: "a1", question: "s = ?", inputs: [], predict: null },
    "0,1,0": null,
    "1,0,0": { id: "b2", question: "w = ?", inputs: [], predict: { id: "p3", options: ["x", "y"] } },
  } };
  const at = (row, col, status = {}) => practiceState({ practice: { status } }, stage, { row, col, head: 0 });
  assert.equal(practiceState({ practice: null }, stage, { row: 0, col: 0, head: 0 }).mode, "off");
  assert.equal(at(0, 0).mode, "ask");
  assert.equal(at(0, 0, { a1: { hints: ["<b>Forgot ÷ √d_k.</b>"] } }).mode, "ask");  // a wrong answer reveals nothing
  assert.equal(at(0, 0, { a1: { revealed: true, correct: "Correct: 1.2" } }).mode, "revealed");
  assert.equal(at(0, 1).mode, "none");  // nothing to compute there: the numbers shown
  assert.equal(at(1, 1).mode, "loading");  // not sent yet
  assert.equal(at(1, 0).mode, "predict");  // a softmax: the prediction first
  assert.equal(at(1, 0, { p3: { predicted: 1, right: true, verdict: "Right" } }).mode, "ask");
  assert.equal(practiceState({ practice: { status: {} } }, { has_entry: false }, { row: 0, col: 0, head: 0 }).mode,
    "none");
  assert.deepEqual(["off", "none", "loading", "predict", "ask", "revealed"].map((mode) => practiceHides({ mode })),
    [false, false, true, true, true, false]);
});

test("practice mode asks at once for an exercise not sent with its entry", () => {
  const stage = { has_entry: true, entries: { "0,0,0": "s" }, exercises: {} };
  const practising = { practice: { status: {} }, stages: { scores: stage } };
  assert.equal(shownMissing(practising, { stage: "scores", row: 0, col: 0, head: 0 }), true);
  assert.equal(shownMissing({ ...practising, practice: null }, { stage: "scores", row: 0, col: 0, head: 0 }), false);
});

test("what a teacher's link fixed does not move", () => {
  assert.deepEqual(unlocked({ stage: "weights", row: 2 }, { stage: true, row: false }), { row: 2 });
  assert.deepEqual(unlocked({ stage: "weights" }, undefined), { stage: "weights" });
});

test("a block of a large matrix: cells say their place in the whole, the whole size clamps, leaving it asks", () => {
  // rows 13-24 and columns 25-36 of a 512 × 384 matrix (the trained model's inputs), sent a block at a time
  const rows = Array.from({ length: 12 }, (_v, i) => `${13 + i} t`);
  const cols = Array.from({ length: 12 }, (_v, j) => `d${25 + j}`);
  const block = panel(rows, cols, { offset: [12, 24], shape: [512, 384] });
  const stage = { has_entry: true, by_row: true, partial: true, entries: {}, rows_loaded: [14], panels: [block] };
  assert.deepEqual(clampPosition(stage, 600, 500, 0, 0), { row: 511, col: 383, head: 0 });
  assert.equal(inBlock(stage, { row: 14, col: 30, head: 0 }), true);
  assert.equal(inBlock(stage, { row: 14, col: 36, head: 0 }), false);
  assert.equal(inBlock(stage, { row: 11, col: 30, head: 0 }), false);
  assert.equal(askFor(stage, { stage: "inputs", row: 14, col: 30, head: 0 }), null);  // its row of the block is here
  assert.equal(askFor(stage, { stage: "inputs", row: 15, col: 30, head: 0 }), "inputs:15");
  // out of the block, even on a row asked for: the block around it (a key of its own, asked once per data)
  assert.equal(askFor(stage, { stage: "inputs", row: 14, col: 40, head: 0 }), "inputs:14:40");
  const html = tableHtml(block, { row: 14, col: 30, head: 0 }, { row: "Row", column: "Column" });
  assert.match(html, /<td style="[^"]*" class="framed"><button type="button" class="cell" data-row="14" data-col="30"/);
  assert.doesNotMatch(html, /data-row="0"/);
  assert.equal((html.match(/class="framed"/g) ?? []).length, 1);
  assert.equal(inBlock(data.stages.scores, { row: 40, col: 40, head: 0 }), true);  // sent whole: every entry is there
});
