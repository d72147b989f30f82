// LangGraph's official JS client (@langchain/langgraph-sdk, what agent-chat-ui is built on) on a
// thread's own stream, against the server that server/tests/studio.rs started: `joinStream` sees
// a run made on the thread from its start to its end, `streamMode: "lifecycle"` only the starts
// and ends, and `lastEventId` what came after that event. Usage: node thread_stream.mjs BASE_URL

import { Client } from "@langchain/langgraph-sdk";

const [base] = process.argv.slice(2);
if (!base) throw new Error("usage: node thread_stream.mjs BASE_URL");
const client = new Client({ apiUrl: base });
const expect = (cond, what) => { if (!cond) { console.error(`not ok - ${what}`); process.exit(1); } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ended = (parts) => parts.some((p) => p.event === "metadata" && p.data.status === "run_done");

/** Listens to the thread's stream with `options` until `done(parts)` holds (15 s at most). */
async function listen(tid, options, act, done) {
  const controller = new AbortController();
  const parts = [];
  const reading = (async () => {
    try {
      for await (const part of client.threads.joinStream(tid, { ...options, signal: controller.signal })) parts.push(part);
    } catch (e) {
      if (!controller.signal.aborted) throw e;
    }
  })();
  await sleep(300);
  await act();
  const deadline = Date.now() + 15_000;
  while (!done(parts)) {
    expect(Date.now() < deadline, `timed out with ${JSON.stringify(parts)}`);
    await sleep(50);
  }
  controller.abort();
  await reading;
  return parts;
}

const thread = await client.threads.create();
const tid = thread.thread_id;
let run;
const all = await listen(tid, {}, async () => {
  run = await client.runs.create(tid, "chain", { input: { topic: "js" }, streamMode: ["values", "updates"] });
  await client.runs.join(tid, run.run_id);
}, ended);
expect(all[0].event === "metadata" && all[0].data.run_id === run.run_id && all[0].data.attempt === 1, `the run's start first: ${JSON.stringify(all[0])}`);
expect(all.some((p) => p.event === "updates") && all.some((p) => p.event === "values"), `the run's events: ${JSON.stringify(all)}`);
const last = all[all.length - 1];
expect(last.event === "metadata" && last.data.status === "run_done" && last.data.run_id === run.run_id, `its end last: ${JSON.stringify(last)}`);
expect(all.every((p) => p.id), "every part has its id");
console.log(`ok - joinStream saw the run whole (${all.length} parts)`);

let second;
const lifecycle = await listen(tid, { streamMode: "lifecycle" }, async () => {
  second = await client.runs.create(tid, "chain", { input: { topic: "js2" } });
  await client.runs.join(tid, second.run_id);
}, ended);
expect(lifecycle.length === 2 && lifecycle.every((p) => p.event === "metadata"), `lifecycle: ${JSON.stringify(lifecycle)}`);
expect(lifecycle[0].data.run_id === second.run_id && lifecycle[1].data.status === "run_done", `lifecycle: ${JSON.stringify(lifecycle)}`);
console.log("ok - streamMode lifecycle: the start and the end");

const after = await listen(tid, { lastEventId: all[0].id }, async () => {}, (parts) => parts.filter((p) => p.data.status === "run_done").length === 2);
expect(after[0].id === all[1].id, `after the first run's start comes its next event: ${JSON.stringify(after[0])}`);
expect(JSON.stringify(after.slice(0, all.length - 1)) === JSON.stringify(all.slice(1)), "the first run's events again, from the one after");
console.log("ok - lastEventId: what came after it, then the second run");
