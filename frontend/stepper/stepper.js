// The step-through element: a step page's whole walk-through (every stage's formula, matrices and explained
// entries, built by the server from attention_core's step-through protocol) stepped in the browser. Next,
// Previous, the step picker, a cell, the row / column / head pickers and the arrow keys repaint here, with no
// server rerun; the position goes into the page's link (history.replaceState, after the paint when the browser is
// idle) so that a reload or a shared link opens it. A stage shown once, or built ahead in idle time, stays in the
// page laid out and out of sight (stepper.css: content-visibility), so that showing it again is a switch, not a
// new layout. What needs the server goes there after the paint: a stage's entries the first time it is shown
// (when the page sent only the current stage's), and in a class the step reached, at most once every few seconds
// (handed to reporter.js, which sends it from a fragment of its own).
//
// Loaded by Streamlit's Components v2 (ui/stepper.py passes this file's text as the component's js): its default
// export is called with {data, parentElement, setTriggerValue} on every script run that draws the element. The pure
// functions are exported too, for node --test (stepper.test.js). Formulas are typeset by KaTeX, pinned and served
// by the app (static/katex, scripts/vendor_katex.py).

/** HTML-escape a text (every text from the server that is not already HTML: labels, tokens, numbers). */
export function escapeHtml(text) {
  return String(text)
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

/** The stage `delta` steps from `key` in `order` (kept inside it). */
export function moveStage(order, key, delta) {
  const index = Math.max(0, order.indexOf(key));
  return order[Math.min(order.length - 1, Math.max(0, index + delta))];
}

/** The explained panel of a stage for a head (a per-head stage has one per head), or null. */
export function explainedPanel(stage, head) {
  return stage.panels.find((p) => p.explained && (p.head === null || p.head === head)) ?? null;
}

/** A panel's whole size, [rows, columns]: a large matrix sent a block at a time says it (`shape`). */
export function panelShape(panel) {
  return panel.shape ?? [panel.rows.length, panel.cols.length];
}

/** (row, col, head) moved inside the stage's explained panel and its heads, as the server's clamp_entry does. */
export function clampPosition(stage, row, col, head, numHeads) {
  const h = Math.min(Math.max(head, 0), Math.max(numHeads, 1) - 1);
  const panel = explainedPanel(stage, h);
  if (!panel) return { row, col, head: h };
  const clamp = (v, n) => Math.min(Math.max(v, 0), n - 1);
  const [rows, cols] = panelShape(panel);
  return { row: clamp(row, rows), col: clamp(col, cols), head: h };
}

/** Whether the entry at `position` is in the block of the stage's explained panel that was sent (a large matrix is
 * sent a block at a time, `offset` its first row and column; a matrix sent whole holds every entry). */
export function inBlock(stage, position) {
  const panel = stage.panels ? explainedPanel(stage, position.head) : null;
  if (!panel?.offset) return true;
  const [r0, c0] = panel.offset;
  return position.row >= r0 && position.row < r0 + panel.rows.length
    && position.col >= c0 && position.col < c0 + panel.cols.length;
}

/** The key of an entry in a stage's `entries`: "row,col,head". */
export function entryKey(row, col, head) {
  return `${row},${col},${head}`;
}

/** `href` with the position in its query: the stage field, the entry's row and column (and head), others kept. */
export function withPosition(href, fields, position) {
  const url = new URL(href);
  url.searchParams.set(fields.stage, position.stage);
  url.searchParams.set(fields.row, String(position.row));
  url.searchParams.set(fields.col, String(position.col));
  if (fields.head) url.searchParams.set(fields.head, String(position.head));
  return url.toString();
}

/** What a key press does in the element: ["stage", ±1], ["row" | "col", ±1], or null (not ours). */
export function keyAction(event) {
  if (event.altKey || event.ctrlKey || event.metaKey) return null;
  switch (event.key) {
    case "ArrowUp": return ["row", -1];
    case "ArrowDown": return ["row", 1];
    case "ArrowLeft": return ["col", -1];
    case "ArrowRight": return ["col", 1];
    case "PageUp": case "[": return ["stage", -1];
    case "PageDown": case "]": return ["stage", 1];
    default: return null;
  }
}

/** What the element must ask the server for at `position` of `stage`: null when its entries are there, else the
 * stage's key (a stage sent whole on request), "stage:row" (a large stage, sent a row at a time: `by_row`) or
 * "stage:row:col" (an entry outside the block of a matrix sent a block at a time: the block around it). */
export function askFor(stage, position) {
  if (!stage.has_entry || (stage.entries !== null && !stage.partial)) return null;
  if (!stage.by_row) return position.stage;
  if (!inBlock(stage, position)) return `${position.stage}:${position.row}:${position.col}`;
  if ((stage.rows_loaded ?? []).includes(position.row)) return null;
  return `${position.stage}:${position.row}`;
}

/** A formula "a = b = c" cut at its top-level equals signs (not inside braces, \left … \right or an environment,
 * \begin … \end): ["a", "b", "c"].
 * An entry too wide for its box is shown a part a line, so that its result stays in sight on a phone. */
export function equationParts(latex) {
  const parts = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < latex.length; i++) {
    const c = latex[i];
    if (c === "\\") {
      if (latex.startsWith("\\left", i) || latex.startsWith("\\begin", i)) depth++;
      else if (latex.startsWith("\\right", i) || latex.startsWith("\\end", i)) depth--;
      i++;  // an escaped character (\{, \}) is no brace
    } else if (c === "{") depth++;
    else if (c === "}") depth--;
    else if (c === "=" && depth === 0) {
      parts.push(latex.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(latex.slice(start).trim());
  return parts.filter((part) => part !== "");
}

/** The stages to ask the server for at `position`: the shown one when its entries are not there, and its neighbours
 * (the next first), so that Next and Previous find theirs already sent; in a class (`data.report`: the class shares
 * one walk-through, built once for all) every stage, so that a student asks once per page, not at every other step.
 * None asked before (`asked`, askFor's keys). */
export function stagesToAsk(data, position, asked) {
  const index = data.order.indexOf(position.stage);
  const around = data.report
    ? data.order.map((_key, k) => k).sort((a, b) => Math.abs(a - index) - Math.abs(b - index) || b - a)
    : [index, index + 1, index - 1];
  const keys = around.map((k) => data.order[k]).filter((key) => key !== undefined);
  return keys.filter((key) => {
    const ask = askFor(data.stages[key], { ...position, stage: key });
    return ask !== null && !asked.has(ask);
  });
}

/** Whether the entry shown at `position` is missing from what the element was sent (its stage explains entries and
 * that one is not there): asked for at once. Otherwise what is asked for (the neighbours' entries, the rest of the
 * stage) can wait until the learner pauses (PREFETCH_MS), so that a changed setting paints with one script run. */
export function shownMissing(data, position) {
  const stage = data.stages[position.stage];
  if (!stage?.has_entry) return false;
  const key = entryKey(position.row, position.col, position.head);
  return !(key in (stage.entries ?? {})) || (Boolean(data.practice) && !(key in (stage.exercises ?? {})));
}

/** Practice mode at `position`: what the element shows of the entry. "off" (no practice), "none" (nothing to
 * compute there), "loading" (its exercise not sent yet), "predict" (a softmax: which key gets the most weight, asked
 * first), "ask" (the question and the answer box), "revealed" (answered right or solution shown: the numbers are
 * back); with the exercise, its status (the server's verdicts) and the prediction's. The stage's numbers are hidden
 * while the mode is "loading", "predict" or "ask". */
export function practiceState(data, stage, position) {
  if (!data.practice) return { mode: "off" };
  if (!stage.has_entry) return { mode: "none" };
  const key = entryKey(position.row, position.col, position.head);
  const exercises = stage.exercises ?? {};
  if (!(key in exercises)) return { mode: "loading" };
  const exercise = exercises[key];
  if (exercise === null) return { mode: "none" };
  const status = data.practice.status[exercise.id] ?? {};
  const predicted = exercise.predict ? data.practice.status[exercise.predict.id] ?? null : null;
  if (status.revealed) return { mode: "revealed", exercise, status, predicted };
  if (exercise.predict && !predicted) return { mode: "predict", exercise, status, predicted };
  return { mode: "ask", exercise, status, predicted };
}

/** Whether practice mode hides the stage's numbers in `state` (practiceState's). */
export function practiceHides(state) {
  return ["loading", "predict", "ask"].includes(state.mode);
}

/** How long the element waits, after a paint that shows every number it needs, before it asks for the entries of
 * the stages around (ms): a pause, not a click, so that a setting changed or a step taken is one round trip. */
export const PREFETCH_MS = 400;
/** The same wait after new numbers from the server (a setting changed, the page opened): longer, so that a learner
 * clicking a setting's + again and again is not queued behind the entries of the last numbers (their sympy, a few
 * tenths of a second on the server, holds its turn). */
export const SETTLE_MS = 1500;

/** The position to show when new data arrives: the server's when it moved it on purpose (a new token: a link, the
 * teacher, a reset), else the one the learner stepped to (kept inside the new stages' matrices). */
export function nextPosition(data, current) {
  const order = data.order;
  const own = current && current.token === data.token && order.includes(current.stage) ? current : null;
  const wanted = own ?? data.position;
  const stage = order.includes(wanted.stage) ? wanted.stage : data.position.stage;
  const clamped = clampPosition(data.stages[stage], wanted.row, wanted.col, wanted.head ?? 0, data.num_heads);
  return { stage, ...clamped, token: data.token };
}

/** The panel a panel that follows the explained entry shows at `position` (`by_entry[head][row]`, clamped), and the
 * key it is shown for; a panel that does not follow it, itself. */
export function followingPanel(panel, position) {
  if (!panel.by_entry) return [panel, ""];
  const heads = panel.by_entry;
  const head = Math.min(Math.max(position.head ?? 0, 0), heads.length - 1);
  const row = Math.min(Math.max(position.row, 0), heads[head].length - 1);
  return [heads[head][row], `${head},${row}`];
}

/** One matrix as an HTML table: its caption, column and row labels (headers), a number and a colour per cell; the
 * explained panel's cells are buttons, the explained one framed (aria-pressed). */
export function tableHtml(panel, position, labels) {
  const chosen = panel.explained && (panel.head === null || panel.head === position.head);
  const [r0, c0] = panel.offset ?? [0, 0];  // a block of a large matrix: its cells say their place in the whole
  const head = panel.cols.map((c) => `<th scope="col">${escapeHtml(c)}</th>`).join("");
  const body = panel.rows.map((rowLabel, i) => {
    const cells = panel.cols.map((_c, j) => {
      const text = escapeHtml(panel.text[i][j]);
      const style = `background:${panel.fill[i][j]};color:${panel.dark[i][j] ? "#fff" : "#000"}`;
      const framed = chosen && r0 + i === position.row && c0 + j === position.col;
      if (!panel.explained) return `<td style="${style}">${text}</td>`;
      const name = escapeHtml(`${labels.row} ${rowLabel}, ${labels.column} ${panel.cols[j]}: ${panel.text[i][j]}`);
      return `<td style="${style}"${framed ? ' class="framed"' : ""}><button type="button" class="cell" ` +
        `data-row="${r0 + i}" data-col="${c0 + j}" data-head="${panel.head ?? 0}" aria-label="${name}" ` +
        `aria-pressed="${framed}" tabindex="${framed ? 0 : -1}">${text}</button></td>`;
    }).join("");
    return `<tr><th scope="row">${escapeHtml(rowLabel)}</th>${cells}</tr>`;
  }).join("");
  const corner = `<th scope="col" class="corner">${panel.row_title || panel.col_title
    ? `${escapeHtml(panel.row_title)} \\ ${escapeHtml(panel.col_title)}` : ""}</th>`;
  return `<div class="matrix-scroll" tabindex="0"><table class="matrix">` +
    `<caption>${panel.caption_html}</caption><thead><tr>${corner}${head}</tr></thead><tbody>${body}</tbody>` +
    `</table></div>`;
}

// ---------------------------------------------------------------- the browser side (not run under node --test)

const KATEX = { promise: null, cache: new Map() };

/** Load KaTeX's style sheet and script from the app's static folder, once per page. */
function loadKatex(base) {
  if (globalThis.katex) return Promise.resolve(globalThis.katex);
  if (KATEX.promise) return KATEX.promise;
  KATEX.promise = new Promise((resolve, reject) => {
    const css = document.createElement("link");
    css.rel = "stylesheet";
    css.href = new URL(`${base}katex/katex.min.css`, document.baseURI).toString();
    document.head.appendChild(css);
    const script = document.createElement("script");
    script.src = new URL(`${base}katex/katex.min.js`, document.baseURI).toString();
    script.onload = () => resolve(globalThis.katex);
    script.onerror = () => reject(new Error("KaTeX could not be loaded"));
    document.head.appendChild(script);
  });
  return KATEX.promise;
}

const VEGA = { promise: null };

/** Load a script from the app's static folder. */
function loadScript(src) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = new URL(src, document.baseURI).toString();
    script.onload = resolve;
    script.onerror = () => reject(new Error(`${src} could not be loaded`));
    document.head.appendChild(script);
  });
}

/** Load Vega, then Vega-Lite (which needs it), from the app's static folder, once per page: only a page with a chart
 * that follows the entry (RoPE's rotated pair) asks for them. */
function loadVega(base) {
  if (!VEGA.promise) {
    VEGA.promise = (globalThis.vega ? Promise.resolve() : loadScript(`${base}vega/vega.min.js`))
      .then(() => (globalThis.vegaLite ? null : loadScript(`${base}vega-lite/vega-lite.min.js`)));
  }
  return VEGA.promise;
}

/** The chart of the entry shown (a page's chart that follows the entry): its title, the chart drawn by Vega from its
 * Vega-Lite spec (SVG; described in words for a screen reader) and its numbers as a table; empty for none. */
async function drawChart(box, chart, data) {
  box.chart = chart;
  delete box.dataset.drawn;
  box.view?.finalize();
  box.view = null;
  if (!chart) {
    box.innerHTML = "";
    return;
  }
  box.innerHTML = `<p class="chart-title">${chart.title_html}</p>` +
    `<div class="chart" role="img" aria-label="${escapeHtml(chart.spec.description ?? "")}"></div>` +
    tableHtml(chart.table, { row: -1, col: -1, head: 0 }, data.labels);
  await loadVega(data.static);
  if (box.chart !== chart) return;  // the learner moved on meanwhile
  const spec = globalThis.vegaLite.compile(chart.spec).spec;
  box.view = new globalThis.vega.View(globalThis.vega.parse(spec),
    { renderer: "svg", container: box.querySelector(".chart"), hover: false });
  await box.view.runAsync();
  box.dataset.drawn = "true";  // for the browser tests
}

/** A formula typeset in display mode (cached by its LaTeX: a step back shows it again at once). */
function typeset(latex) {
  let html = KATEX.cache.get(latex);
  if (html === undefined) {
    html = globalThis.katex.renderToString(latex, { displayMode: true, throwOnError: false, output: "htmlAndMathml" });
    KATEX.cache.set(latex, html);
  }
  return html;
}

function formulaHtml(lines) {
  return lines.map((line) => `<div class="formula-line" dir="ltr">${typeset(line)}</div>`).join("");
}

/** The link is the element's for the position it shows: Streamlit's frontend writes the page's query (the server's
 * settings) with history.replaceState / pushState on a script run, after the element drew, and the server's copy of
 * the step may be older than the element's. So every write of the URL is followed by the element's position again
 * (for the element shown last), and the link a learner copies is always the step they see. */
const LINK = { owner: null };

function followUrlWrites() {
  if (LINK.installed || typeof window === "undefined") return;
  LINK.installed = true;
  for (const name of ["replaceState", "pushState"]) {
    const original = window.history[name].bind(window.history);
    window.history[name] = (state, title, url) => {
      original(state, title, url);
      if (LINK.owner && !LINK.writing) LINK.owner();
    };
  }
}

/** The element's state between script runs: one per mounted element (its parent), so that a rerun with new data
 * keeps where the learner was. */
const MOUNTED = new WeakMap();

/** `changes` of the position without what a teacher's link fixed (`locked`: stage, row, col, head). */
export function unlocked(changes, locked) {
  return Object.fromEntries(Object.entries(changes).filter(([part]) => !locked?.[part]));
}

/** The navigation: Previous, the step picker, Next (built once per data; a step only changes its values); all three
 * disabled when a teacher's link fixed the step. */
function navHtml(data) {
  const labels = data.labels;
  const fixed = data.locked?.stage ? " disabled" : "";
  const options = data.order.map((key) =>
    `<option value="${escapeHtml(key)}">${escapeHtml(data.titles[key])}</option>`).join("");
  return `<nav class="stepper${fixed ? " fixed" : ""}" aria-label="${escapeHtml(labels.step)}">` +
    `<button type="button" data-move="-1"${fixed}>${escapeHtml(labels.previous)}</button>` +
    `<label class="step-pick">${escapeHtml(labels.step)}<select data-pick="stage"${fixed}>${options}</select>` +
    `</label><button type="button" data-move="1"${fixed}>${escapeHtml(labels.next)}</button></nav>`;
}

/** What a section shows besides its stage: the page's notes, the checks' caption, its layout (a section is built again
 * when they change; each stage's own checks are in its data, under its sig). */
function notesKey(data) {
  return JSON.stringify([data.warnings_html, data.notes_html, data.check_caption_html,
    data.default_stage, data.layout, Boolean(data.practice)]);
}

/** One stage's section: what the step does, the formula, the matrices, the remarks, the explained entry's place,
 * the checks and the code. Built on the stage's first visit and kept: a step back only shows it again. */
function stageHtml(data, key, position) {
  const stage = data.stages[key];
  const labels = data.labels;
  const panels = stage.panels.map((p, k) => `<div class="panel"${p.by_entry ? ` data-follows="${k}"` : ""}>` +
    `${p.by_entry ? "" : tableHtml(p, position, labels)}` +
    `<p class="scroll-cue" aria-hidden="true">${escapeHtml(labels.scroll ?? "")}</p></div>`).join("");
  const beside = data.layout === "beside" && stage.panels.length === 1;
  return (stage.opened_html && key === data.default_stage ? `<p class="opened">${stage.opened_html}</p>` : "") +
    `<div class="explain">${stage.explain_html}</div>` +
    `<div class="${beside ? "beside" : "stacked"}"><section class="formula" aria-label="${escapeHtml(labels.formula)}">` +
    `<h4>${escapeHtml(labels.formula)}</h4>${formulaHtml(stage.formula)}</section>` +
    `<div class="panels${stage.panels.length > 1 ? " many" : ""}">${panels}</div></div>` +
    (data.practice ? `<div class="practice-note"></div>` : "") +
    (stage.mask ? `<div class="mask-tools"><button type="button" data-reset-mask title="${
      escapeHtml(stage.mask.reset_help)}"${stage.mask.edited ? "" : " disabled"}>${escapeHtml(stage.mask.reset)}` +
      `</button><span>${escapeHtml(stage.mask.text)}</span></div>` : "") +
    (stage.remark_html ? `<p class="remark">${stage.remark_html}</p>` : "") +
    (stage.details_html ? `<p class="details">${stage.details_html}</p>` : "") +
    data.warnings_html.map((w) => `<p class="warning" role="alert">${w}</p>`).join("") +
    data.notes_html.map((n) => `<p class="note">${n}</p>`).join("") +
    (stage.has_entry ? `<section class="entry" aria-live="polite"><h3>${escapeHtml(labels.explain)}</h3>` +
      `<div class="pickers"></div>${data.practice ? `<div class="practice-ask"></div>` : ""}` +
      `<div class="entry-formula"></div><div class="entry-chart"></div></section>` : "") +
    stage.checks_html.map((c) => `<p class="check ${c.ok ? "ok" : "bad"}">${c.html}</p>`).join("") +
    (data.check_caption_html ? `<p class="details">${data.check_caption_html}</p>` : "") +
    (stage.code.length ? `<details class="code"><summary>${escapeHtml(labels.code)}</summary>` +
      stage.code.map((k) => `<pre><code>${escapeHtml(data.codes[k])}</code></pre>`).join("") + `</details>` : "");
}

/** The pickers of the explained entry (row, column, head) of a stage, showing the position. */
function pickersHtml(data, stage, position) {
  const labels = data.labels;
  const target = explainedPanel(stage, position.head);
  const pick = (name, values, selected, field) => `<label>${escapeHtml(name)}<select data-pick="${field}"` +
    `${data.locked?.[field] ? " disabled" : ""}>` +
    values.map((v, k) => `<option value="${k}"${k === selected ? " selected" : ""}>${escapeHtml(v)}</option>`).join("") +
    `</select></label>`;
  const heads = data.num_heads && stage.per_head
    ? pick(labels.head, Array.from({ length: data.num_heads }, (_v, k) => String(k + 1)), position.head, "head") : "";
  return pick(labels.row, target.all_rows ?? target.rows, position.row, "row") +
    pick(labels.column, target.all_cols ?? target.cols, position.col, "col") + heads;
}

/** A matrix wider than its box (a phone) scrolls sideways: its panel says so under it ("scroll →"). */
function markWider(section, width) {
  // measured once per width of the element: each measure is a layout forced twice (its caption's width reset, set)
  if (width !== undefined && section.dataset.measuredAt === String(width)) return;
  if (width !== undefined) section.dataset.measuredAt = String(width);
  for (const box of section.querySelectorAll(".matrix-scroll")) {
    const caption = box.querySelector("caption");
    if (caption) caption.style.width = "";  // measured at the table's own width
    const wider = box.scrollWidth > box.clientWidth + 1;
    box.parentElement.classList.toggle("wider", wider);
    // its caption stays as wide as the box and in view (sticky), so that it reads whole without scrolling
    if (caption && wider) caption.style.width = `${box.clientWidth}px`;
  }
}

/** What the learner typed in an answer box, by the exercise's name: kept while the element redraws its box. */
const TYPED = new Map();

/** Practice mode: the line under the formula (the numbers hidden, or nothing to compute here). */
function practiceNoteHtml(data, state) {
  const labels = data.practice.labels;
  if (state.mode === "none") return `<p class="note">${labels.nothing_html}</p>`;
  if (practiceHides(state)) return `<p class="note hidden-note">${escapeHtml(labels.hidden)}</p>`;
  return "";
}

/** Practice mode, under the entry's pickers: the question, the prediction asked first, the answer box and the
 * verdicts; once revealed, the verdict above the worked entry. */
function practiceAskHtml(data, state) {
  const labels = data.practice.labels;
  const { exercise, status, predicted } = state;
  if (state.mode === "loading") return `<p class="loading">${escapeHtml(data.labels.loading)}</p>`;
  if (state.mode === "revealed") {
    return status.correct ? `<p class="verdict right">${status.correct}</p>`
      : `<p class="note">${escapeHtml(labels.worked)}</p>`;
  }
  if (!exercise) return "";
  let html = `<h3>${escapeHtml(labels.your_turn)}</h3>` +
    `<p><button type="button" data-pick-entry>${escapeHtml(labels.pick)}</button></p>` +
    formulaHtml([exercise.question]) + `<p>${escapeHtml(labels.with)}</p>` + formulaHtml(exercise.inputs);
  if (exercise.predict) {
    if (!predicted) {
      return html + `<p>${exercise.predict.question_html}</p>` +
        `<div class="choices" role="group" aria-label="${escapeHtml(labels.choose)}">` +
        exercise.predict.options.map((option, k) => `<button type="button" data-predict="${k}">` +
          `${escapeHtml(option)}</button>`).join("") + `</div>`;
    }
    html += `<p class="verdict ${predicted.right ? "right" : "wrong"}">${predicted.verdict}</p>`;
  }
  html += `<form class="answer"><label>${escapeHtml(labels.answer)} <input type="text" name="answer" ` +
    `maxlength="40" placeholder="0.42" inputmode="decimal" autocomplete="off" ` +
    `title="${escapeHtml(labels.answer_help)}"></label> <button type="submit" class="primary">` +
    `${escapeHtml(labels.check)}</button></form><p class="details accepted">${escapeHtml(labels.accepted)}</p>`;
  if (status.error) html += `<p class="error" role="alert">${status.error}</p>`;
  if (status.hints) {
    html += status.hints.map((hint) => `<p class="hint" role="alert">${hint}</p>`).join("") +
      `<p><button type="button" data-reveal>${escapeHtml(labels.reveal)}</button></p>`;
  }
  return html;
}

/** Practice mode's parts of a section at `position`: the numbers hidden or shown, the question, the verdicts. */
function showPractice(section, data, stage, position) {
  const state = practiceState(data, stage, position);
  section.classList.toggle("practice-hidden", practiceHides(state));
  const sig = JSON.stringify([entryKey(position.row, position.col, position.head), state.mode,
    state.exercise?.id ?? null, state.status ?? null, state.predicted ?? null]);
  const note = section.querySelector(".practice-note");
  const ask = section.querySelector(".practice-ask");
  if (note.dataset.sig === sig) return;
  note.dataset.sig = sig;
  note.innerHTML = practiceNoteHtml(data, state);
  if (!ask) return;
  ask.innerHTML = practiceAskHtml(data, state);
  const input = ask.querySelector('input[name="answer"]');
  if (input) {
    input.value = TYPED.get(state.exercise.id) ?? "";
    input.oninput = () => TYPED.set(state.exercise.id, input.value);
  }
}

/** A stage's section, built (hidden) and kept. */
function buildSection(view, data, key, position) {
  const section = document.createElement("div");
  section.className = "stage";
  section.hidden = true;
  section.dataset.stage = key;
  section.dataset.sig = data.stages[key].sig;
  section.dataset.notes = notesKey(data);
  section.innerHTML = stageHtml(data, key, position);
  view.root.querySelector(".stages").appendChild(section);
  view.sections.set(key, section);
  return section;
}

/** In the browser's idle time after a paint: the sections of the stages before and after the one shown, built and
 * hidden, and their entry at the same place typeset, so that Next and Previous only show them (on a slow laptop a
 * section's first build is most of a step's time). */
function prebuild(view, data, position) {
  const index = data.order.indexOf(position.stage);
  for (const key of [data.order[index + 1], data.order[index - 1]]) {
    if (key === undefined || !view.root.isConnected) continue;
    if (!view.sections.has(key)) buildSection(view, data, key, position);
    const latex = data.stages[key].entries?.[entryKey(position.row, position.col, position.head)];
    if (latex !== undefined) typeset(latex);
    const built = view.sections.get(key);
    if (!built.dataset.warm) {  // styled and laid out now, out of sight, and kept so (not when Next shows it)
      built.classList.add("warming");
      built.scrollHeight;
      // its matrices measured now too (a layout of the whole page each: ~40 ms on a model page), not when shown
      markWider(built, view.width);
      built.classList.remove("warming");
      built.dataset.warm = "1";
    }
  }
}

/** Run `work` when the browser is idle (within a second), or soon where it cannot say; cancelled by the next call. */
function whenIdle(mounted, work) {
  if (mounted.idle) (globalThis.cancelIdleCallback ?? clearTimeout)(mounted.idle);
  mounted.idle = globalThis.requestIdleCallback ? requestIdleCallback(work, { timeout: 1000 }) : setTimeout(work, 50);
}

/** An entry too wide for its box: a part a line, the result last and in sight (the box that scrolls may be KaTeX's
 * own, styled by the app's layout). Not when the entry shown has changed meanwhile. */
function splitIfWide(entry, latex) {
  if (entry.dataset.latex !== latex || !entry.isConnected) return;
  const line = entry.querySelector(".formula-line");
  const math = line?.querySelector(".katex-html");
  if (entry.querySelectorAll(".formula-line").length === 1 && math
      && math.getBoundingClientRect().width > line.clientWidth + 1) {
    entry.innerHTML = formulaHtml(equationParts(latex).map((part, k) => (k ? `= ${part}` : part)));
  }
}

/** Show the position: the stage's section (built on its first visit), the framed cell, the pickers, the entry. */
function show(view, data, position) {
  const { root } = view;
  const nav = root.querySelector(".stepper");
  const index = data.order.indexOf(position.stage);
  nav.querySelector('[data-move="-1"]').disabled = index === 0 || Boolean(data.locked?.stage);
  nav.querySelector('[data-move="1"]').disabled = index === data.order.length - 1 || Boolean(data.locked?.stage);
  nav.querySelector("select").value = position.stage;
  const section = view.sections.get(position.stage) ?? buildSection(view, data, position.stage, position);
  if (view.shown !== section) {
    if (view.shown) view.shown.hidden = true;
    section.hidden = false;
    view.shown = section;
    // its matrices measured after the paint (a layout of the whole page: ~40 ms on a model page), when not already
    // measured at this width (a section built ahead is measured then: prebuild)
    if (section.dataset.measuredAt !== String(view.width)) {
      requestAnimationFrame(() => setTimeout(() => { if (view.shown === section) markWider(section, view.width); }));
    }
  }
  const stage = data.stages[position.stage];
  for (const box of section.querySelectorAll("[data-follows]")) {  // a panel that follows the entry: its row's
    const [panel, key] = followingPanel(stage.panels[Number(box.dataset.follows)], position);
    if (box.dataset.shown !== key) {
      box.querySelector(".matrix-scroll")?.remove();
      box.insertAdjacentHTML("afterbegin", tableHtml(panel, position, data.labels));
      box.dataset.shown = key;
      markWider(section);
    }
  }
  for (const cell of section.querySelectorAll('button.cell[aria-pressed="true"]')) {
    cell.setAttribute("aria-pressed", "false");
    cell.tabIndex = -1;
    cell.parentElement.classList.remove("framed");
  }
  const framed = section.querySelector(`button.cell[data-row="${position.row}"][data-col="${position.col}"]` +
    `[data-head="${position.head}"]`) ?? (explainedPanel(stage, position.head)?.head === null
    ? section.querySelector(`button.cell[data-row="${position.row}"][data-col="${position.col}"]`) : null);
  if (framed) {
    framed.setAttribute("aria-pressed", "true");
    framed.tabIndex = 0;
    framed.parentElement.classList.add("framed");
  }
  if (stage.has_entry) {
    const pickers = section.querySelector(".pickers");
    // built again when their options can change (a teacher's lock, another head's panel), else only moved
    const options = `${stage.panels.indexOf(explainedPanel(stage, position.head))},${JSON.stringify(data.locked ?? null)}`;
    if (pickers.dataset.options !== options) {
      pickers.innerHTML = pickersHtml(data, stage, position);
      pickers.dataset.options = options;
    } else {
      for (const select of pickers.querySelectorAll("select[data-pick]")) {
        const value = String(position[select.dataset.pick]);
        if (select.value !== value) select.value = value;
      }
    }
    const latex = stage.entries ? stage.entries[entryKey(position.row, position.col, position.head)] : undefined;
    const entry = section.querySelector(".entry-formula");
    const shown = latex === undefined ? "" : latex;
    if (entry.dataset.latex !== shown) {
      entry.innerHTML = latex === undefined ? `<p class="loading">${escapeHtml(data.labels.loading)}</p>`
        : formulaHtml([latex]);
      entry.dataset.latex = shown;
      // measured after the paint, when the page is laid out anyway (measured now, it forced a layout of the whole
      // page: ~35 ms of a model page's cell click, 136 ms at 4x)
      if (latex !== undefined) requestAnimationFrame(() => setTimeout(() => splitIfWide(entry, latex)));
    }
    const box = section.querySelector(".entry-chart");
    const chart = stage.charts?.[entryKey(position.row, position.col, position.head)] ?? null;
    if (box.chart !== chart) drawChart(box, chart, data).catch((error) => { box.textContent = String(error); });
  }
  if (data.practice) showPractice(section, data, stage, position);
  return framed;
}

export default function mount(component) {
  const { data, parentElement, setTriggerValue } = component;
  const mounted = MOUNTED.get(parentElement) ?? {};
  MOUNTED.set(parentElement, mounted);
  let root = parentElement.querySelector(".ae-stepper");
  if (!root) {
    root = document.createElement("div");
    root.className = "ae-stepper";
    parentElement.appendChild(root);
  }
  root.classList.toggle("presenter", Boolean(data.presenter));
  const fresh = mounted.data !== data;
  // the same numbers (the entries asked for came, a verdict) or new ones (a setting, the page opened)
  const sameNumbers = Boolean(mounted.data)
    && data.order.every((key) => mounted.data.stages[key]?.sig === data.stages[key].sig);
  mounted.data = data;
  mounted.position = nextPosition(data, mounted.position);
  if (fresh) mounted.asked = new Set();  // new data: a stage it sent in part is asked for again

  const writeLink = () => {
    const href = withPosition(window.location.href, mounted.data.fields, mounted.position);
    if (href === window.location.href) return;
    LINK.writing = true;
    try {
      window.history.replaceState(window.history.state, "", href);
    } finally {
      LINK.writing = false;
    }
  };
  followUrlWrites();
  const path = window.location.pathname;  // another page's URL is not this element's to write
  LINK.owner = () => { if (root.isConnected && window.location.pathname === path) writeLink(); };
  const report = () => {  // in a class: the step reached, when the server has not heard of it, at most every few s
    if (!data.report) return;
    clearTimeout(mounted.reportTimer);
    const wait = Math.max(0, (mounted.lastReport ?? 0) + data.report_ms - Date.now());
    mounted.reportTimer = setTimeout(() => {
      const { stage, row, col, head } = mounted.position;
      if (stage === mounted.reported) return;  // a request for entries brought it (or nothing moved)
      mounted.lastReport = Date.now();  // kept across the script's runs (a new mount each)
      mounted.reported = stage;
      window.dispatchEvent(new CustomEvent("ae-reached", { detail: { stage, row, col, head } }));  // reporter.js sends it
    }, wait);
  };
  const update = (focusCell, linkLater = false, pause = PREFETCH_MS) => {
    const framed = show(mounted.view, mounted.data, mounted.position);
    const { view, data: shownData, position } = mounted;
    const ahead = () => { if (mounted.view === view && mounted.data === shownData) prebuild(view, shownData, position); };
    clearTimeout(mounted.aheadTimer);
    whenIdle(mounted, () => {
      if (linkLater) LINK.owner();  // a click's step goes into the link after the paint (a same-document navigation
      // costs a slow laptop ~30 ms), within a second
      // the steps around built ahead: at once after a step; after new numbers only once the learner pauses (each
      // section's layout is one of the whole page: ~60 ms on a model page, 250 ms at 4x, which a setting's next
      // click would wait behind)
      if (pause === SETTLE_MS) mounted.aheadTimer = setTimeout(() => whenIdle(mounted, ahead), pause);
      else ahead();
    });
    if (!linkLater) writeLink();
    // a cell moved to with the keys outside the block sent: focused when its block comes
    if (focusCell && !framed) mounted.focusLater = true;
    if ((focusCell || mounted.focusLater) && framed) {
      // focused after the paint, when the page is laid out anyway (focus() now forced a layout of the whole page:
      // ~35 ms of a model page's click, 140 ms at 4x); a mouse's click focused the cell already
      if (document.activeElement !== framed) {
        requestAnimationFrame(() => setTimeout(() => { if (framed.isConnected) framed.focus(); }));
      }
      mounted.focusLater = false;
    }
    // the entries of this stage and its neighbours (a large stage's: this row's), once per data: asked after the
    // paint (one round trip, no redraw); at once when the entry shown is missing, else when the learner pauses
    clearTimeout(mounted.needTimer);
    root.dataset.prefetch = "waiting";  // for the browser tests: a request may still come
    mounted.needTimer = setTimeout(ask, shownMissing(mounted.data, mounted.position) ? 0 : pause);
  };
  const ask = () => {
    delete root.dataset.prefetch;
    const wanted = stagesToAsk(mounted.data, mounted.position, mounted.asked);
    // not once the learner has left the page (a sidebar link: a request would name the page left)
    if (!wanted.length || !root.isConnected || window.location.pathname !== path) return;
    for (const key of wanted) mounted.asked.add(askFor(mounted.data.stages[key], { ...mounted.position, stage: key }));
    const { stage: key, row, col, head } = mounted.position;
    mounted.reported = key;  // the server hears of the step with the request
    setTriggerValue("need", { stage: key, row, col, head, stages: wanted });
  };
  const moveTo = (changes, focusCell = false) => {
    const d = mounted.data;
    const next = { ...mounted.position, ...unlocked(changes, d.locked) };
    const newStage = next.stage !== mounted.position.stage;
    mounted.position = { ...next, ...clampPosition(d.stages[next.stage], next.row, next.col, next.head, d.num_heads) };
    if (!focusCell) mounted.focusLater = false;  // the learner went on with something else
    update(focusCell, true);
    // on a projector the step's matrix must be on screen: the step-through comes to the top of the window
    if (newStage && d.presenter) root.scrollIntoView({ block: "start" });
    report();
  };

  const send = (name, extra = {}) => {  // practice mode: to the server, from the entry shown
    const { stage, row, col, head } = mounted.position;
    setTriggerValue(name, { stage, row, col, head, ...extra });
  };
  root.onsubmit = (event) => {
    const form = event.target.closest("form.answer");
    if (!form) return;
    event.preventDefault();
    const text = form.querySelector('input[name="answer"]').value;
    form.querySelector('button[type="submit"]').disabled = true;  // until the verdict comes back
    send("answer", { text });
  };
  root.onclick = (event) => {
    const predict = event.target.closest("[data-predict]");
    if (predict) return send("predict", { choice: Number(predict.dataset.predict) });
    if (event.target.closest("[data-reveal]")) return send("reveal");
    if (event.target.closest("[data-pick-entry]")) return send("pick");
    const move = event.target.closest("[data-move]");
    if (move) return moveTo({ stage: moveStage(mounted.data.order, mounted.position.stage, Number(move.dataset.move)) });
    const cell = event.target.closest("button.cell");
    if (cell) {
      moveTo({ row: Number(cell.dataset.row), col: Number(cell.dataset.col), head: Number(cell.dataset.head) }, true);
      // a mask's cell is an edit: flipped on the server (new numbers come back)
      if (mounted.data.stages[mounted.position.stage].mask) {
        const { stage, row, col, head } = mounted.position;
        setTriggerValue("flip", { stage, row, col, head });
      }
      return;
    }
    if (event.target.closest("[data-reset-mask]")) {
      const { stage, row, col, head } = mounted.position;
      setTriggerValue("reset_mask", { stage, row, col, head });
    }
  };
  root.onchange = (event) => {
    const pick = event.target.dataset.pick;
    if (pick === "stage") moveTo({ stage: event.target.value });
    else if (pick) moveTo({ [pick]: Number(event.target.value) });
  };
  root.onkeydown = (event) => {
    if (["SELECT", "INPUT"].includes(event.target.tagName)) return;  // a picker's own arrow keys, an answer's caret
    const action = keyAction(event);
    if (!action) return;
    event.preventDefault();
    const [what, delta] = action;
    if (what === "stage") moveTo({ stage: moveStage(mounted.data.order, mounted.position.stage, delta) });
    else moveTo({ [what]: mounted.position[what] + delta }, true);
  };

  if (!mounted.resize && typeof ResizeObserver !== "undefined") {
    mounted.resize = new ResizeObserver((entries) => {  // the element's width (not its height: a step's own)
      const width = Math.round(entries[entries.length - 1].contentRect.width);
      if (width === mounted.width) return;
      mounted.width = width;
      if (!mounted.view) return;
      mounted.view.width = width;
      if (mounted.view.shown) markWider(mounted.view.shown, width);
    });
    mounted.resize.observe(root);
  }
  loadKatex(data.static).then(() => {
    const nav = navHtml(data);
    if (!mounted.view || mounted.view.nav !== nav) {  // new stages or labels: everything is built again
      root.innerHTML = nav + `<p class="score" hidden></p><div class="stages"></div>`;
      mounted.view = { root, nav, sections: new Map(), shown: null, width: mounted.width };
    } else if (fresh) {  // new data: a stage's section is kept while the stage is the same (its sig)
      for (const [key, section] of mounted.view.sections) {
        if (!data.stages[key] || section.dataset.sig !== data.stages[key].sig
            || section.dataset.notes !== notesKey(data)) {
          section.remove();
          mounted.view.sections.delete(key);
          if (mounted.view.shown === section) mounted.view.shown = null;
        } else {  // its entry is redrawn only if its LaTeX is new, its pickers if a teacher's lock is (show)
          section.querySelector(".practice-note")?.removeAttribute("data-sig");  // its verdicts may be new
        }
      }
    }
    const score = root.querySelector(".score");
    score.hidden = !data.practice;
    score.innerHTML = data.practice ? data.practice.score_html : "";
    update(false, false, fresh && !sameNumbers ? SETTLE_MS : PREFETCH_MS);
    root.dataset.ready = "true";  // for the browser tests: typeset and wired
  }).catch((error) => { root.textContent = String(error); });
  return () => {
    clearTimeout(mounted.aheadTimer);
    clearTimeout(mounted.reportTimer);
    clearTimeout(mounted.needTimer);
    if (mounted.idle) (globalThis.cancelIdleCallback ?? clearTimeout)(mounted.idle);
  };
}
