// LangGraph's official JS client (@langchain/langgraph-sdk) on the thread-centric streaming
// protocol, against the server that server/tests/studio.rs started: `client.threads.stream()`
// over SSE and over a WebSocket starts a run and resolves its output, an interrupt arrives with
// its payload and is answered with `input.respond`, and a model's tokens arrive as one message.
// Usage: node --experimental-websocket protocol.mjs BASE_URL (Node 20 has no WebSocket of its own)

import { Client } from "@langchain/langgraph-sdk";

const [base] = process.argv.slice(2);
if (!base) throw new Error("usage: node protocol.mjs BASE_URL");
const client = new Client({ apiUrl: base });
const expect = (cond, what) => { if (!cond) { console.error(`not ok - ${what}`); process.exit(1); } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const within = (promise, what, ms = 15_000) =>
  Promise.race([promise, sleep(ms).then(() => { throw new Error(`timed out: ${what}`); })]);

async function until(check, what) {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    expect(Date.now() < deadline, `timed out waiting for ${what}`);
    await sleep(50);
  }
}

for (const transport of ["sse", "websocket"]) {
  const thread = client.threads.stream({ assistantId: "chain", transport });
  const started = await thread.run.start({ input: { topic: "js" } });
  expect(typeof started.run_id === "string", `run.start answers the run's id: ${JSON.stringify(started)}`);
  const out = await within(thread.output, `the chain's output over ${transport}`);
  expect(JSON.stringify(out) === JSON.stringify({ topic: "js", log: ["a:js", "b"] }), `the output over ${transport}: ${JSON.stringify(out)}`);
  await thread.close();
  console.log(`ok - run.start and its output over ${transport}`);
}

{
  const thread = client.threads.stream({ assistantId: "hitl" });
  await thread.run.start({ input: { topic: "js" } });
  await until(() => thread.interrupted && thread.interrupts.length === 1, "the interrupt");
  const [interrupt] = thread.interrupts;
  expect(interrupt.payload?.question === "ok?", `the question arrives as the payload: ${JSON.stringify(interrupt)}`);
  // The thread's output resolved as the run paused (its lifecycle `interrupted`); the answered
  // run's end shows on the thread's state.
  await thread.input.respond({ interrupt_id: interrupt.interruptId, namespace: interrupt.namespace, response: "yes" });
  let state;
  await until(async () => {
    state = await client.threads.getState(thread.threadId);
    return state.values?.log?.length === 2;
  }, "the answered run's end");
  expect(JSON.stringify(state.values.log) === JSON.stringify(["a:js", "ask:yes"]), `the answer reached the graph: ${JSON.stringify(state.values)}`);
  await thread.close();
  console.log("ok - an interrupt answered with input.respond");
}

{
  const thread = client.threads.stream({ assistantId: "chatbot" });
  await thread.run.start({ input: { messages: [{ type: "human", content: "hi" }] } });
  let text;
  for await (const message of thread.messages) {
    text = await within(message.text, "the message's text");
    break;
  }
  expect(text === "hello there friend", `the model's tokens as one message: ${JSON.stringify(text)}`);
  await thread.close();
  console.log("ok - a model's tokens as one message");
}
