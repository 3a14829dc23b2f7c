// In a class: the step reached, sent to the server by this small element of its own (ui/stepper.py _REPORTER),
// drawn in a fragment of its own: its trigger reruns that fragment alone, not the page's body around the step-through
// element. The step-through element (stepper.js) hands it the position with a DOM event, "ae-reached".

/** The listener of the element mounted last (one per page: a new mount replaces it). */
let listening = null;

export default function mount({ setTriggerValue }) {
  if (listening) window.removeEventListener("ae-reached", listening);
  listening = (event) => setTriggerValue("reached", event.detail);
  window.addEventListener("ae-reached", listening);
}
