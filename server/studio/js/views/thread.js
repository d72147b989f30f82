// One thread: its checkpoints as a timeline (newest first, a page loaded whenever the list is
// scrolled near its end), the chosen checkpoint's state and its changes from its parent (both
// from the server, abbreviated: a state may be megabytes), the pending interrupt with a form for
// the answer, and the edits a person makes: update the state as a node, and run again from any
// checkpoint (a fork).

import { badge, fill, h, pretty, status, when } from "../dom.js";
import { get, post, stream } from "../api.js";
import { jsonArea, schemaForm } from "../form.js";

const PAGE = 200;

export async function threadView(tid) {
  const path = `/threads/${encodeURIComponent(tid)}`;
  const studio = `/studio/api/threads/${encodeURIComponent(tid)}`;
  const header = h("h1");
  const timeline = h("div.timeline", { "data-testid": "timeline" });
  const end = h("p.muted.end", { "data-testid": "timeline-end" });
  const detail = h("div.panel", { "data-testid": "detail" }, h("p.muted", {}, "Loading the checkpoint…"));
  const pending = h("div");
  const feedback = h("div");
  let thread = null;
  let assistant = null;
  let entries = [];
  let rows = [];
  let complete = false;
  let loading = null;
  let shown = 0;

  /** The thread's row without its values (they may be megabytes). */
  async function readThread() {
    const found = await post("/threads/search", { ids: [tid], limit: 1, select: ["thread_id", "status", "metadata"] });
    if (!found.length) throw new Error(`Thread ${tid} not found`);
    return found[0];
  }

  /** The next page of older checkpoints, appended (or the first page, replacing the list). */
  function more(fresh) {
    if (fresh) { entries = []; rows = []; complete = false; loading = null; }
    if (complete) return Promise.resolve();
    if (loading) return loading;
    const q = new URLSearchParams({ limit: PAGE });
    if (entries.length) q.set("before", entries[entries.length - 1].checkpoint_id);
    const load = get(`${studio}/timeline?${q}`).then((got) => {
      if (load !== loading) return; // a refresh started over meanwhile
      const from = entries.length;
      entries = entries.concat(got);
      const added = got.map((c, j) => row(c, from + j));
      rows = rows.concat(added);
      if (fresh) fill(timeline, added); else timeline.append(...added);
      complete = got.length < PAGE;
      end.textContent = complete ? `${entries.length} checkpoints` : "";
      // The row just above the page: its next nodes are what the page's first one ran.
      if (from > 0) nextOf(from - 1);
      loading = null;
      if (!complete && timeline.isConnected && nearEnd()) more(false);
    });
    loading = load;
    return load;
  }

  const nearEnd = () => timeline.scrollTop + timeline.clientHeight > timeline.scrollHeight - 400;
  timeline.addEventListener("scroll", () => { if (nearEnd()) more(false); }, { passive: true });

  /** A checkpoint's row: its step, source, the nodes whose writes it applied, and (filled in
   *  once the newer one is known) the nodes that ran next. */
  function row(c, i) {
    const m = c.metadata || {};
    return h("div.cp", { onclick: () => choose(i), "data-step": m.step, "data-checkpoint": c.checkpoint_id },
      h("span.mono", {}, `#${m.step ?? "?"}`), h("span", {}, badge(m.source || "")),
      h("span", {}, h("span", {}, (c.writes || []).join(", ")), h("span.next", {}, nextText(i))));
  }

  /** The nodes that ran after checkpoint `i`: those its child in the list applied. */
  function nextText(i) {
    const newer = entries[i - 1];
    return newer && newer.parent_checkpoint_id === entries[i].checkpoint_id && newer.writes.length
      ? ` → ${newer.writes.join(", ")}` : "";
  }

  function nextOf(i) {
    const span = rows[i] && rows[i].querySelector(".next");
    if (span) span.textContent = nextText(i);
  }

  /** Shows checkpoint `i`: its state and changes, read from the server. */
  async function choose(i, known) {
    const entry = entries[i];
    if (!entry) { fill(detail, h("p.muted", {}, "No checkpoint yet.")); return; }
    const ticket = ++shown;
    rows.forEach((el, j) => el.classList.toggle("selected", j === i));
    let got = known;
    try {
      got = got || await get(`${studio}/checkpoint?checkpoint_id=${encodeURIComponent(entry.checkpoint_id)}`);
    } catch (e) { fill(detail, h("p.error", {}, e.message)); return; }
    if (ticket !== shown) return; // another checkpoint was chosen meanwhile
    const s = got.state;
    detail.dataset.step = s.metadata && s.metadata.step;
    detail.dataset.checkpoint = s.checkpoint_id;
    fill(detail,
      h("h2", {}, `Step ${s.metadata && s.metadata.step} `, h("span.muted.mono", {}, s.checkpoint_id)),
      h("p.muted", {}, when(s.created_at), s.next.length ? ` · next: ${s.next.join(", ")}` : " · no next node"),
      h("h2", {}, "Changes from the parent"),
      h("div.diff", { "data-testid": "diff" },
        got.changes.length ? got.changes.map(change) : h("p.muted", {}, "none"),
        got.more_changes ? h("p.muted", {}, `… and ${got.more_changes} more changes`) : null),
      h("h2", {}, "State"), h("pre", { "data-testid": "state" }, pretty(s.values)),
      edits(s.checkpoint_id));
  }

  function change(c) {
    const show = (v) => JSON.stringify(v);
    if (c.kind === "add") return h("div.add", {}, `+ ${c.path}: ${show(c.after)}`);
    if (c.kind === "remove") return h("div.del", {}, `− ${c.path}: ${show(c.before)}`);
    return h("div.chg", {}, `~ ${c.path}: ${show(c.before)} → ${show(c.after)}`);
  }

  /** Update the state as a node at the chosen checkpoint, or run again from it. */
  function edits(id) {
    const values = jsonArea({}, 4);
    const asNode = h("input", { placeholder: "as node (optional)", "aria-label": "as node" });
    const update = async () => {
      try {
        await post(`${path}/state`, { values: values.value(), as_node: asNode.value.trim() || undefined, checkpoint_id: id });
        await refresh();
      } catch (e) { fill(feedback, h("p.error", {}, e.message)); }
    };
    return h("div", {},
      h("h2", {}, "Edit"),
      h("label", {}, "Update the state ", h("span.muted", {}, "(a new checkpoint after this one, as if the node wrote it)")),
      values, h("div.row", {}, asNode, h("button.secondary", { onclick: update, "data-testid": "update" }, "Update state")),
      assistant ? h("div.row", {}, h("button", { onclick: () => runFrom(id), "data-testid": "fork" }, "Run from this checkpoint")) : null);
  }

  async function runFrom(checkpointId, command) {
    fill(feedback, h("p.muted", {}, "running…"));
    status("running…");
    let failed = null;
    try {
      const body = { assistant_id: assistant.assistant_id, stream_mode: ["updates"] };
      if (command) body.command = command; else { body.input = null; body.checkpoint_id = checkpointId; }
      await stream(`${path}/runs/stream`, body, (event, data) => { if (event === "error") failed = data; });
      fill(feedback, failed ? h("p.error", {}, `${failed.error}: ${failed.message}`) : h("p", { "data-testid": "run-finished" }, "The run ended."));
    } catch (e) {
      fill(feedback, h("p.error", {}, e.message));
    } finally {
      status("");
    }
    await refresh();
  }

  /** The head's open interrupts, each with a form for its answer. */
  function showPending(head) {
    const open = head ? (head.tasks || []).flatMap((t) => (t.interrupts || []).map((i) => ({ ...i, node: t.name }))) : [];
    if (!open.length || !assistant) { fill(pending); return; }
    fill(pending, open.map((i) => interruptForm(i, open.length > 1)));
  }

  function interruptForm(i, several) {
    const q = i.value;
    const choices = q && Array.isArray(q.choices) ? q.choices : null;
    const form = choices ? null : schemaForm(q && (q.response_schema || q.schema), undefined);
    const answer = (value) => runFrom(null, { resume: several ? { [i.id]: value } : value });
    return h("div.interrupt", { "data-testid": "interrupt" },
      h("b", {}, `${i.node} asks:`),
      q && typeof q.question === "string" ? h("p", {}, q.question) : h("pre", {}, typeof q === "string" ? q : pretty(q)),
      choices
        ? h("div.row", {}, choices.map((c) => h("button", { onclick: () => answer(c.id ?? c), "data-choice": c.id ?? c }, c.label || c.id || String(c))))
        : h("div", {}, form, h("div.row", {}, h("button", { onclick: () => { try { answer(form.value()); } catch (e) { fill(feedback, h("p.error", {}, e.message)); } }, "data-testid": "answer" }, "Answer"))));
  }

  /** Reads the thread, its newest page of checkpoints and its head (state, changes, interrupts),
   *  and shows them. `first`, on opening the view: the thread's row and its assistant, already
   *  asked for; then the view paints as soon as the row and the timeline are in, and only then
   *  asks for the head (the slowest: two states compared on the server), which would otherwise
   *  hold the first paint back by sharing the server's time. */
  async function refresh(first) {
    const heading = first ? null : get(`${studio}/checkpoint`);
    const chosen = shown;
    const [t] = await Promise.all([first ? first.reading : readThread(), more(true), first && first.finding]);
    thread = t;
    fill(header, "Thread ", h("span.mono", {}, tid), " ", h("span", { "data-testid": "thread-status" }, badge(t.status)));
    const showing = (heading || get(`${studio}/checkpoint`)).then((head) => showHead(head, chosen));
    if (first) showing.catch((e) => fill(detail, h("p.error", {}, e.message)));
    else await showing;
  }

  /** The head's interrupts, and its state and changes when it is the newest row (unless a
   *  checkpoint was chosen since `chosen`). */
  async function showHead(head, chosen) {
    showPending(head.state);
    if (shown !== chosen) return;
    const newest = entries[0];
    if (newest && head.state && newest.checkpoint_id === head.state.checkpoint_id) {
      const span = rows[0].querySelector(".next");
      if (span && head.state.next.length) span.textContent = ` → ${head.state.next.join(", ")}`;
      await choose(0, head);
    } else await choose(0);
  }

  // Everything the first paint needs is asked for at once.
  const reading = readThread();
  const finding = reading
    .then((t) => post("/assistants/search", { graph_id: t.metadata && t.metadata.graph_id, limit: 1 }))
    .then((found) => { assistant = found[0] || null; });
  await refresh({ reading, finding });
  const el = h("div", {}, header,
    h("div.grid", {},
      h("div.panel", {}, pending, feedback, h("h2", {}, "Checkpoints"), timeline, end),
      detail));
  return { el };
}
