// A chat with an assistant whose state has a `messages` field: the reply's tokens shown as
// `messages-tuple` events bring them (merged by message id, as LangGraph's `useStream` does),
// then the whole conversation from the run's last `values`.

import { fill, h, status } from "../dom.js";
import { post, stream } from "../api.js";

export function chatPanel(assistant) {
  const log = h("div.chat", { "data-testid": "chat" });
  const text = h("input", { placeholder: "Say something", "aria-label": "message" });
  const send = h("button", { "data-testid": "send" }, "Send");
  let thread = null;
  const bubbles = new Map();

  const kind = (m) => String(m.type || "").replace(/MessageChunk$/i, "").replace(/^AI$/, "ai").toLowerCase();
  const content = (m) => typeof m.content === "string" ? m.content
    : (m.content || []).map((b) => b.text || "").join("");
  function bubble(m) {
    const b = h("div.msg." + (kind(m) || "ai"), { "data-id": m.id || "" }, content(m));
    if (m.tool_calls && m.tool_calls.length) b.append(h("div.muted", {}, m.tool_calls.map((c) => `→ ${c.name}(${JSON.stringify(c.args)})`).join("\n")));
    return b;
  }
  function show(messages) {
    bubbles.clear();
    fill(log, messages.map((m) => { const b = bubble(m); if (m.id) bubbles.set(m.id, b); return b; }));
    log.scrollTop = log.scrollHeight;
  }

  async function say() {
    const words = text.value.trim();
    if (!words) return;
    text.value = "";
    send.disabled = true;
    status("thinking…");
    log.append(h("div.msg.human", {}, words));
    try {
      if (!thread) thread = (await post("/threads", { metadata: { graph_id: assistant.graph_id, chat: true } })).thread_id;
      await stream(`/threads/${encodeURIComponent(thread)}/runs/stream`, {
        assistant_id: assistant.assistant_id,
        input: { messages: [{ type: "human", content: words }] },
        stream_mode: ["messages-tuple", "values"],
      }, (event, data) => {
        if (event === "messages" && Array.isArray(data)) {
          const chunk = data[0];
          let b = bubbles.get(chunk.id);
          if (!b) { b = h("div.msg." + (kind(chunk) || "ai"), { "data-id": chunk.id }); bubbles.set(chunk.id, b); log.append(b); }
          b.append(content(chunk));
          log.scrollTop = log.scrollHeight;
        } else if (event === "values" && data && Array.isArray(data.messages)) {
          show(data.messages);
        } else if (event === "error") {
          log.append(h("div.msg.system.error", {}, `${data.error}: ${data.message}`));
        }
      });
    } catch (e) {
      log.append(h("div.msg.system.error", {}, e.message));
    } finally {
      send.disabled = false;
      status("");
    }
  }
  send.addEventListener("click", say);
  text.addEventListener("keydown", (e) => { if (e.key === "Enter") say(); });
  return h("div.panel", {}, h("h2", {}, "Chat"), log, h("div.row", {}, text, send));
}
