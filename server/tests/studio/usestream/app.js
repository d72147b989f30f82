// A chat page on LangGraph's own React hook, `useStream` from @langchain/langgraph-sdk (what
// agent-chat-ui is built on), pointed at a weir server:
// `index.html?api=URL&assistant=ID[&thread=ID][&reconnect=1][&history=1]`.
//
// - The thread id lives in the URL (`thread`), as agent-chat-ui keeps it, so a reload stays on
//   the thread; with `reconnect=1` the hook rejoins a run still streaming (`reconnectOnMount`:
//   the run id kept in sessionStorage, `joinStream` with `Last-Event-ID`).
// - With `history=1` the hook reads the thread's history (`fetchStateHistory`), and each message
//   gets agent-chat-ui's controls: edit a human message or regenerate an AI one (a `submit` from
//   the checkpoint before it: a branch), and switch between the branches (`setBranch`).
// - A pending interrupt is shown with its question and a field for the answer (a `submit` of
//   `{command: {resume}}`).
//
// Each human message goes with an id of its own, as agent-chat-ui sends it (`uuidv4()`).
//
// Every render records the AI message's text in `window.seen`, so a test can tell tokens that
// streamed in from a reply that arrived whole.

import { createElement as h, useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

// A human message as agent-chat-ui makes one: with an id.
const human = (content) => ({ id: crypto.randomUUID(), type: "human", content });

const params = new URLSearchParams(location.search);
window.seen = [];

function text(m) {
  return typeof m.content === "string" ? m.content : (m.content || []).map((b) => b.text || "").join("");
}

/** Keeps the thread id in the URL, so that a reload opens the same thread. */
function rememberThread(id) {
  const url = new URL(location.href);
  url.searchParams.set("thread", id);
  history.replaceState(null, "", url);
}

function App() {
  const [threadId, setThreadId] = useState(params.get("thread"));
  const thread = useStream({
    apiUrl: params.get("api"),
    assistantId: params.get("assistant"),
    messagesKey: "messages",
    threadId,
    onThreadId: (id) => { rememberThread(id); setThreadId(id); },
    reconnectOnMount: params.get("reconnect") === "1",
    fetchStateHistory: params.get("history") === "1",
  });
  const [draft, setDraft] = useState("");
  const [answer, setAnswer] = useState("");
  const [editing, setEditing] = useState(null);
  for (const m of thread.messages) if (m.type === "ai") window.seen.push(text(m));
  const send = () => {
    const input = params.get("input") === "topic" ? { topic: draft } : { messages: [human(draft)] };
    thread.submit(input, { streamMode: ["values", "messages-tuple"] });
    setDraft("");
  };
  const resume = () => {
    thread.submit(undefined, { command: { resume: answer } });
    setAnswer("");
  };
  const interrupt = thread.interrupt;
  return h("main", null,
    thread.messages.map((m, i) => h(Message, { key: m.id || i, m, i, thread, editing, setEditing })),
    h("input", { "aria-label": "message", value: draft, onChange: (e) => setDraft(e.target.value) }),
    h("button", { onClick: send }, "Send"),
    h("span", { id: thread.isLoading ? "loading" : "idle" }, thread.isLoading ? "…" : "idle"),
    interrupt && interrupt.value !== undefined ? h("div", { id: "interrupt" },
      h("p", { id: "question" }, interrupt.value.question ?? JSON.stringify(interrupt.value)),
      h("input", { "aria-label": "answer", value: answer, onChange: (e) => setAnswer(e.target.value) }),
      h("button", { onClick: resume }, "Resume")) : null,
    h("pre", { id: "values" }, JSON.stringify(thread.values)),
    thread.error ? h("pre", { id: "error" }, String(thread.error.message || thread.error)) : null);
}

/** A message, and with the history read, agent-chat-ui's edit / regenerate and branch switcher. */
function Message({ m, i, thread, editing, setEditing }) {
  const [draft, setDraft] = useState(text(m));
  const meta = params.get("history") === "1" ? thread.getMessagesMetadata(m, i) : null;
  const parent = meta?.firstSeenState?.parent_checkpoint;
  const options = meta?.branchOptions || [];
  const at = options.indexOf(meta?.branch);
  const controls = [];
  if (meta && options.length > 1) {
    controls.push(h("span", { key: "b", className: "branches", "data-branch": at + 1, "data-branches": options.length },
      h("button", { onClick: () => thread.setBranch(options[at - 1]), disabled: at <= 0 }, "‹"),
      `${at + 1}/${options.length}`,
      h("button", { onClick: () => thread.setBranch(options[at + 1]), disabled: at >= options.length - 1 }, "›")));
  }
  if (meta && m.type === "human") {
    controls.push(editing === m.id
      ? h("span", { key: "e" },
          h("input", { "aria-label": "edit", value: draft, onChange: (e) => setDraft(e.target.value) }),
          h("button", { onClick: () => {
            setEditing(null);
            thread.submit({ messages: [human(draft)] }, { checkpoint: parent, streamMode: ["values"] });
          } }, "Save"))
      : h("button", { key: "e", onClick: () => setEditing(m.id) }, "Edit"));
  }
  if (meta && m.type === "ai") {
    controls.push(h("button", { key: "r", onClick: () => thread.submit(undefined, { checkpoint: parent, streamMode: ["values"] }) }, "Regenerate"));
  }
  return h("div", { className: "row" },
    h("p", { className: "msg", "data-type": m.type }, text(m)), controls);
}

createRoot(document.getElementById("root")).render(h(App));
