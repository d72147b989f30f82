// The assistants the server has: one per served graph, and any made through the API.

import { h, when } from "../dom.js";
import { post } from "../api.js";

export async function assistantsView() {
  const list = await post("/assistants/search", { limit: 100 });
  const rows = list.map((a) =>
    h("tr.link", { onclick: () => (location.hash = `#/assistants/${encodeURIComponent(a.assistant_id)}`), "data-assistant": a.graph_id },
      h("td", {}, h("b", {}, a.name || a.graph_id)), h("td.mono", {}, a.graph_id),
      h("td.mono.muted", {}, a.assistant_id), h("td.muted", {}, when(a.updated_at))));
  const el = h("div", {},
    h("h1", {}, "Assistants"),
    h("div.panel", {}, list.length
      ? h("table", {}, h("tr", {}, h("th", {}, "name"), h("th", {}, "graph"), h("th", {}, "id"), h("th", {}, "updated")), rows)
      : h("p.muted", {}, "This server serves no graph.")));
  return { el };
}
