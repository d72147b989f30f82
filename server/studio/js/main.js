// The studio's entry: a hash router over its views (assistants, an assistant's graph with its
// run launcher and chat, the threads list, a thread's timeline).

import { fill, h, status } from "./dom.js";
import { assistantsView } from "./views/assistants.js";
import { assistantView } from "./views/assistant.js";
import { threadsView } from "./views/threads.js";
import { threadView } from "./views/thread.js";

const routes = [
  [/^#?\/?$/, () => assistantsView(), "home"],
  [/^#\/assistants\/([^/]+)$/, (m) => assistantView(decodeURIComponent(m[1])), "home"],
  [/^#\/threads$/, () => threadsView(), "threads"],
  [/^#\/threads\/([^/]+)$/, (m) => threadView(decodeURIComponent(m[1])), "threads"],
];

let current = null;

async function render() {
  const view = document.getElementById("view");
  if (current && current.close) current.close();
  current = null;
  status("");
  for (const [pattern, make, nav] of routes) {
    const m = location.hash.match(pattern);
    if (!m) continue;
    for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("active", a.dataset.nav === nav);
    try {
      current = await make(m);
      fill(view, current.el);
    } catch (e) {
      fill(view, h("p.error", { "data-testid": "view-error" }, e.message));
    }
    return;
  }
  fill(view, h("p.error", {}, `No page here: ${location.hash}`));
}

window.addEventListener("hashchange", render);
render();
