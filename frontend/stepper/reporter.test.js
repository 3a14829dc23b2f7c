// The class's reporter (reporter.js) under Node's test runner: the step-through element's "ae-reached" event becomes
// its trigger "reached", from the element mounted last only.
import assert from "node:assert/strict";
import { test } from "node:test";

globalThis.window = new EventTarget();
const { default: mount } = await import("./reporter.js");

test("the step reached is sent once, by the reporter mounted last", () => {
  const sent = [];
  mount({ setTriggerValue: (name, value) => sent.push(["first", name, value]) });
  mount({ setTriggerValue: (name, value) => sent.push(["second", name, value]) });  // the script's next run
  window.dispatchEvent(new CustomEvent("ae-reached", { detail: { stage: "weights", row: 1, col: 2, head: 0 } }));
  assert.deepEqual(sent, [["second", "reached", { stage: "weights", row: 1, col: 2, head: 0 }]]);
});
