// Threads, searchable by status and metadata, newest first, a page at a time.

import { badge, fill, h, when } from "../dom.js";
import { post } from "../api.js";

const PAGE = 50;

export async function threadsView() {
  const statusSel = h("select", { "aria-label": "status" },
    ["", "idle", "busy", "interrupted", "error"].map((s) => h("option", { value: s }, s || "any status")));
  const meta = h("input", { placeholder: 'metadata, as JSON: {"user": "ada"}', "aria-label": "metadata" });
  const body = h("tbody");
  const more = h("button.secondary", { onclick: () => load(false) }, "More");
  const error = h("p.error");
  let offset = 0;
  async function load(fresh) {
    if (fresh) offset = 0;
    error.textContent = "";
    // Only what the table shows: a thread's values may be megabytes.
    const query = { limit: PAGE, offset, sort_by: "updated_at", sort_order: "desc", select: ["thread_id", "status", "metadata", "updated_at"] };
    if (statusSel.value) query.status = statusSel.value;
    if (meta.value.trim()) {
      try { query.metadata = JSON.parse(meta.value); } catch (e) { error.textContent = "metadata: " + e.message; return; }
    }
    let page;
    try { page = await post("/threads/search", query); } catch (e) { error.textContent = e.message; return; }
    const rows = page.map((t) =>
      h("tr.link", { onclick: () => (location.hash = `#/threads/${encodeURIComponent(t.thread_id)}`), "data-thread": t.thread_id },
        h("td.mono", {}, t.thread_id), h("td", {}, badge(t.status)),
        h("td.mono.muted", {}, JSON.stringify(t.metadata || {})), h("td.muted", {}, when(t.updated_at))));
    if (fresh) fill(body, rows); else body.append(...rows);
    offset += page.length;
    more.hidden = page.length < PAGE;
  }
  const el = h("div", {},
    h("h1", {}, "Threads"),
    h("div.panel", {},
      h("div.row", {}, statusSel, meta, h("button", { onclick: () => load(true) }, "Search")),
      error,
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "thread"), h("th", {}, "status"), h("th", {}, "metadata"), h("th", {}, "updated"))), body),
      more));
  await load(true);
  return { el };
}
