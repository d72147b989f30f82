// One thread: its checkpoints as a timeline (newest first, a page loaded whenever the list is
// scrolled near its end, only the rows in sight in the page), the chosen checkpoint's state and
// its changes from its parent (both from the server, abbreviated: a state may be megabytes), the
// pending interrupt with a form for the answer, and the edits a person makes: update the state
// as a node, and run again from any checkpoint (a fork). It stays live: the thread's own stream
// tells of each run's start and end and of each state edit, whoever made them (another client,
// a cron), and the view reads the thread again then.

import { badge, fill, h, pretty, status, when } from "../dom.js";
import { get, post, stream } from "../api.js";
import { jsonArea, schemaForm } from "../form.js";

const PAGE = 200;
/** A timeline row's height in pixels (`.timeline .cp` in studio.css), and the rows drawn beyond
 *  the visible ones on each side, so that a quick scroll does not show a gap. */
const ROW = 30;
const OVERSCAN = 20;

export async function threadView(tid) {
  const path = `/threads/${encodeURIComponent(tid)}`;
  const studio = `/studio/api/threads/${encodeURIComponent(tid)}`;
  const header = h("h1");
  // A thread may have 10,000 checkpoints: the list is as tall as all of them, but only the rows
  // in sight exist (`drawn`, by index), placed at their offset.
  const rowsBox = h("div.rows");
  const timeline = h("div.timeline", { "data-testid": "timeline", "data-count": 0 }, rowsBox);
  const end = h("p.muted.end", { "data-testid": "timeline-end" });
  const detail = h("div.panel", { "data-testid": "detail" }, h("p.muted", {}, "Loading the checkpoint…"));
  const pending = h("div");
  const feedback = h("div");
  let thread = null;
  let assistant = null;
  let entries = [];
  let drawn = new Map();
  let selected = -1;
  let headNext = null;
  let complete = false;
  let loading = null;
  let shown = 0;
  /** How many of the view's own edits and runs are under way: each reads the thread again when
   *  done, so the live stream's news of them is not acted on. */
  let acting = 0;

  /** The thread's row without its values (they may be megabytes). */
  async function readThread() {
    const found = await post("/threads/search", { ids: [tid], limit: 1, select: ["thread_id", "status", "metadata"] });
    if (!found.length) throw new Error(`Thread ${tid} not found`);
    return found[0];
  }

  /** The next page of older checkpoints, appended (or the first page, replacing the list). */
  function more(fresh) {
    if (fresh) { entries = []; complete = false; loading = null; headNext = null; }
    if (complete) return Promise.resolve();
    if (loading) return loading;
    const q = new URLSearchParams({ limit: PAGE });
    if (entries.length) q.set("before", entries[entries.length - 1].checkpoint_id);
    const load = get(`${studio}/timeline?${q}`).then((got) => {
      if (load !== loading) return; // a refresh started over meanwhile
      const from = entries.length;
      entries = entries.concat(got);
      complete = got.length < PAGE;
      end.textContent = complete ? `${entries.length} checkpoints` : "";
      timeline.dataset.count = entries.length;
      rowsBox.style.height = `${entries.length * ROW}px`;
      // Redrawn whole after a refresh; the row just above a new page gets its next nodes (what
      // the page's first one ran).
      if (fresh) { drawn.forEach((el) => el.remove()); drawn = new Map(); }
      if (from > 0 && drawn.has(from - 1)) {
        drawn.get(from - 1).remove();
        drawn.delete(from - 1);
      }
      draw();
      loading = null;
      if (!complete && timeline.isConnected && nearEnd()) more(false);
    });
    loading = load;
    return load;
  }

  /** Draws the rows in sight (and `OVERSCAN` beyond), removes the others. Before the view is on
   *  the page the timeline has no height yet: its first rows are drawn. */
  function draw() {
    const height = timeline.clientHeight || 34 * 16;
    const first = Math.max(0, Math.floor(timeline.scrollTop / ROW) - OVERSCAN);
    const last = Math.min(entries.length, Math.ceil((timeline.scrollTop + height) / ROW) + OVERSCAN);
    for (const [i, el] of drawn) {
      if (i < first || i >= last) { el.remove(); drawn.delete(i); }
    }
    const added = [];
    for (let i = first; i < last; i++) {
      if (drawn.has(i)) continue;
      const el = row(entries[i], i);
      drawn.set(i, el);
      added.push(el);
    }
    rowsBox.append(...added);
  }

  const nearEnd = () => timeline.scrollTop + timeline.clientHeight > timeline.scrollHeight - 400;
  let frame = 0;
  timeline.addEventListener("scroll", () => {
    if (!frame) frame = requestAnimationFrame(() => { frame = 0; draw(); });
    if (nearEnd()) more(false);
  }, { passive: true });

  /** A checkpoint's row: its step, source, the nodes whose writes it applied, and the nodes that
   *  ran next. */
  function row(c, i) {
    const m = c.metadata || {};
    const el = h("div.cp", { onclick: () => choose(i), "data-index": i, "data-step": m.step, "data-checkpoint": c.checkpoint_id },
      h("span.mono", {}, `#${m.step ?? "?"}`), h("span", {}, badge(m.source || "")),
      h("span", {}, h("span", {}, (c.writes || []).join(", ")), h("span.next", {}, nextText(i))));
    el.style.top = `${i * ROW}px`;
    if (i === selected) el.classList.add("selected");
    return el;
  }

  /** The nodes that ran after checkpoint `i`: those its child in the list applied (for the
   *  newest, the head's next nodes once they are known). */
  function nextText(i) {
    if (i === 0 && headNext) return headNext;
    const newer = entries[i - 1];
    return newer && newer.parent_checkpoint_id === entries[i].checkpoint_id && newer.writes.length
      ? ` → ${newer.writes.join(", ")}` : "";
  }

  /** Shows checkpoint `i`: its state and changes, read from the server. */
  async function choose(i, known) {
    const entry = entries[i];
    if (!entry) { fill(detail, h("p.muted", {}, "No checkpoint yet.")); return; }
    const ticket = ++shown;
    selected = i;
    drawn.forEach((el, j) => el.classList.toggle("selected", j === i));
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
      acting++;
      try {
        await post(`${path}/state`, { values: values.value(), as_node: asNode.value.trim() || undefined, checkpoint_id: id });
        await refresh();
      } catch (e) { fill(feedback, h("p.error", {}, e.message)); } finally { acting--; }
    };
    return h("div", {},
      h("h2", {}, "Edit"),
      h("label", {}, "Update the state ", h("span.muted", {}, "(a new checkpoint after this one, as if the node wrote it)")),
      values, h("div.row", {}, asNode, h("button.secondary", { onclick: update, "data-testid": "update" }, "Update state")),
      assistant ? h("div.row", {}, h("button", { onclick: () => runFrom(id), "data-testid": "fork" }, "Run from this checkpoint")) : null);
  }

  async function runFrom(checkpointId, command) {
    acting++;
    try { await runHere(checkpointId, command); } finally { acting--; }
  }

  async function runHere(checkpointId, command) {
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
  async function refresh(first, keep) {
    const heading = first ? null : get(`${studio}/checkpoint`);
    const chosen = shown;
    const [t] = await Promise.all([first ? first.reading : readThread(), more(true), first && first.finding]);
    showThread(t);
    const showing = (heading || get(`${studio}/checkpoint`)).then((head) => showHead(head, chosen, keep));
    if (first) showing.catch((e) => fill(detail, h("p.error", {}, e.message)));
    else await showing;
  }

  function showThread(t) {
    thread = t;
    fill(header, "Thread ", h("span.mono", {}, tid), " ", h("span", { "data-testid": "thread-status" }, badge(t.status)));
  }

  /** The head's interrupts, and its state and changes when it is the newest row (unless a
   *  checkpoint was chosen since `chosen`, or `keep`, an older one still listed, stays chosen). */
  async function showHead(head, chosen, keep) {
    showPending(head.state);
    if (shown !== chosen) return;
    const kept = keep ? entries.findIndex((e) => e.checkpoint_id === keep) : -1;
    if (kept > 0) return choose(kept);
    const newest = entries[0];
    if (newest && head.state && newest.checkpoint_id === head.state.checkpoint_id) {
      headNext = head.state.next.length ? ` → ${head.state.next.join(", ")}` : null;
      const span = drawn.get(0)?.querySelector(".next");
      if (span) span.textContent = nextText(0);
      await choose(0, head);
    } else await choose(0);
  }

  // Everything the first paint needs is asked for at once.
  const reading = readThread();
  const finding = reading
    .then((t) => post("/assistants/search", { graph_id: t.metadata && t.metadata.graph_id, limit: 1 }))
    .then((found) => { assistant = found[0] || null; });
  await refresh({ reading, finding });

  // Live: a run's start shows the thread busy; its end, or a state edit, reads the thread again,
  // keeping an older checkpoint chosen. One read at a time: what comes during one asks for one more.
  let rereading = null;
  let again = false;
  function readAgain() {
    if (acting) return;
    if (rereading) { again = true; return; }
    const keep = selected > 0 ? entries[selected]?.checkpoint_id : null;
    rereading = refresh(null, keep).catch((e) => fill(feedback, h("p.error", {}, e.message))).finally(() => {
      rereading = null;
      if (again) { again = false; readAgain(); }
    });
  }
  const live = new EventSource(`${path}/stream?stream_mode=lifecycle&stream_mode=state_update`);
  live.addEventListener("metadata", (e) => {
    const data = JSON.parse(e.data);
    if (data.status === "run_done") readAgain();
    else readThread().then(showThread, () => {});
  });
  live.addEventListener("state_update", readAgain);

  const el = h("div", {}, header,
    h("div.grid", {},
      h("div.panel", {}, pending, feedback, h("h2", {}, "Checkpoints"), timeline, end),
      detail));
  return { el, close: () => live.close() };
}
