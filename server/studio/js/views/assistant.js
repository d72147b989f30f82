// One assistant: its graph drawn (subgraphs inside), a run launcher whose input form comes from
// the graph's input schema and whose stream lights the nodes as they run, and a chat for graphs
// whose state has a `messages` field.

import { fill, h, pretty, status } from "../dom.js";
import { get, post, stream } from "../api.js";
import { draw } from "../graph.js";
import { schemaForm } from "../form.js";
import { chatPanel } from "./chat.js";

export async function assistantView(id) {
  const [assistant, graph, schemas] = await Promise.all([
    get(`/assistants/${encodeURIComponent(id)}`),
    get(`/assistants/${encodeURIComponent(id)}/graph?xray=true`),
    get(`/assistants/${encodeURIComponent(id)}/schemas`),
  ]);
  const svg = draw(graph);
  const launcher = runLauncher(assistant, schemas, svg);
  const props = (schemas.state_schema && schemas.state_schema.properties) || {};
  const el = h("div", {},
    h("h1", {}, assistant.name || assistant.graph_id, " ", h("span.muted.mono", {}, assistant.graph_id)),
    h("div.grid", {},
      h("div.panel", { "data-testid": "graph" }, h("h2", {}, "Graph"), svg),
      h("div", {},
        "messages" in props ? chatPanel(assistant) : null,
        launcher.el)));
  return { el, close: launcher.close };
}

/** The run launcher: input typed from the schema, thread new or given, events streamed live. */
function runLauncher(assistant, schemas, svg) {
  const form = schemaForm(schemas.input_schema, undefined);
  const threadInput = h("input", { placeholder: "thread id (empty: a new thread)", "aria-label": "thread" });
  const events = h("div.events", { "data-testid": "events" });
  const result = h("div");
  const button = h("button", { onclick: run, "data-testid": "run" }, "Run");
  const abort = new AbortController();

  function log(event, data) {
    events.append(h("div", {}, h("b", {}, event), typeof data === "string" ? data : JSON.stringify(data)));
    events.scrollTop = events.scrollHeight;
  }

  function light(event, data) {
    if (!event.startsWith("tasks") || !data || !data.name) return;
    if ("result" in data || "error" in data) {
      const paused = data.interrupts && data.interrupts.length;
      svg.light(data.name, data.error ? "failed" : paused ? "paused" : "done");
    } else {
      svg.light(data.name, "running");
    }
  }

  async function run() {
    fill(result);
    fill(events);
    svg.reset();
    let input;
    try { input = form.value(); } catch (e) { fill(result, h("p.error", {}, e.message)); return; }
    button.disabled = true;
    status("running…");
    try {
      let tid = threadInput.value.trim();
      if (!tid) tid = (await post("/threads", { metadata: { graph_id: assistant.graph_id } })).thread_id;
      let failed = null;
      await stream(`/threads/${encodeURIComponent(tid)}/runs/stream`, {
        assistant_id: assistant.assistant_id, input,
        stream_mode: ["values", "updates", "tasks", "custom"], stream_subgraphs: true,
      }, (event, data) => {
        if (event === "error") failed = data;
        light(event, data);
        log(event, data);
      }, abort.signal);
      const state = await get(`/threads/${encodeURIComponent(tid)}/state`);
      const paused = state.interrupts && Object.keys(state.interrupts).length;
      svg.settle(paused);
      fill(result,
        failed ? h("p.error", { "data-testid": "run-error" }, `${failed.error}: ${failed.message}`) : null,
        h("p", { "data-testid": "run-done" }, paused ? "The run paused for a person's answer. " : "The run ended. ",
          h("a", { href: `#/threads/${encodeURIComponent(tid)}` }, paused ? "Answer it on the thread" : "Open the thread")),
        h("pre", {}, pretty(state.values)));
    } catch (e) {
      if (e.name !== "AbortError") fill(result, h("p.error", {}, e.message));
    } finally {
      button.disabled = false;
      status("");
    }
  }

  const el = h("div.panel", {},
    h("h2", {}, "Run"),
    h("label", {}, "Input"), form,
    h("label", {}, "Thread"), threadInput,
    h("div.row", {}, button),
    result,
    h("h2", {}, "Events"), events);
  return { el, close: () => abort.abort() };
}
