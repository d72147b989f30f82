// LangGraph's `useStream` React hook against weir: serves `usestream/` (built by `npm run build`)
// on loopback and opens it in Debian's headless Chromium pointed at the weir example server
// (examples/serve.rs), for each scenario named:
//
// - `chat`: send a message to `chatbot`; the reply must render growing, then whole;
// - `rejoin`: send a message, reload the page while the reply streams; the hook must rejoin the
//   run (`reconnectOnMount`: `GET …/runs/{id}/stream` with `Last-Event-ID`) and render it whole;
// - `resume`: run `hitl` to its interrupt, answer it in the page (`command.resume`), see the run
//   end with the answer in the state;
// - `branch`: with the history read (`fetchStateHistory`), edit the first message (a run from
//   the checkpoint before it), then switch back to the first branch (`setBranch`).
//
// Usage: node usestream.mjs API_URL SCREENSHOT_DIR SCENARIO… Prints `ok - <scenario>: …` for
// each; exits non-zero naming what was not as expected.

import { chromium } from "playwright-core";
import { createServer } from "node:http";
import { mkdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";

const [api, shots, ...scenarios] = process.argv.slice(2);
if (!scenarios.length) throw new Error("usage: node usestream.mjs API_URL SCREENSHOT_DIR SCENARIO…");
mkdirSync(shots, { recursive: true });
const REPLY = "hello there friend";
const root = join(import.meta.dirname, "usestream");
const types = { ".html": "text/html", ".js": "text/javascript" };
const files = createServer(async (req, res) => {
  const path = new URL(req.url, "http://x").pathname.replace(/^\/$/, "/index.html");
  try {
    const body = await readFile(join(root, path));
    res.writeHead(200, { "content-type": types[path.slice(path.lastIndexOf("."))] || "application/octet-stream" });
    res.end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((ok) => files.listen(0, "127.0.0.1", ok));
const pageUrl = (assistant, extra = {}) => {
  const q = new URLSearchParams({ api, assistant, ...extra });
  return `http://127.0.0.1:${files.address().port}/?${q}`;
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const fail = (what) => { throw new Error(what); };

/** A fresh page (its own sessionStorage) that collects the page's errors and its API requests. */
async function open(url) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  const requests = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("request", (r) => { if (r.url().startsWith(api)) requests.push({ method: r.method(), url: r.url(), headers: r.headers() }); });
  await page.goto(url);
  return { page, errors, requests, context };
}

async function settled(page) {
  await page.waitForSelector("#idle", { timeout: 30000 });
  const error = await page.$("#error");
  if (error) fail(`the hook reported an error: ${await error.textContent()}`);
}

const texts = (page, type) => page.$$eval(`p[data-type="${type}"]`, (ps) => ps.map((p) => p.textContent));

async function send(page, text) {
  await page.fill('input[aria-label="message"]', text);
  await page.click("text=Send");
}

const run = {
  async chat() {
    const { page, errors } = await open(pageUrl("chatbot"));
    await send(page, "hi");
    await page.waitForSelector('p[data-type="ai"]', { timeout: 30000 });
    await settled(page);
    const replies = await texts(page, "ai");
    if (replies[replies.length - 1] !== REPLY) fail(`the reply is ${JSON.stringify(replies)}, not ${JSON.stringify(REPLY)}`);
    const seen = [...new Set(await page.evaluate(() => window.seen))].filter((s) => s && s !== REPLY);
    if (!seen.some((s) => REPLY.startsWith(s))) fail(`no partial reply was rendered before the whole one (seen: ${JSON.stringify(seen)})`);
    if (errors.length) fail(errors.join("\n"));
    await page.screenshot({ path: `${shots}/usestream.png` });
    return `useStream rendered ${seen.length} partial replies, then "${REPLY}"`;
  },

  async rejoin() {
    const { page, errors, requests } = await open(pageUrl("chatbot", { reconnect: "1" }));
    await send(page, "hi");
    // The first token is in: the run is streaming. Reload the page in the middle of it.
    await page.waitForFunction((reply) => window.seen.some((s) => s && s !== reply), REPLY, { timeout: 30000 });
    const threadId = new URL(page.url()).searchParams.get("thread");
    if (!threadId) fail("the page did not keep the thread in its URL");
    const runId = await page.evaluate((t) => sessionStorage.getItem(`lg:stream:${t}`), threadId);
    if (!runId) fail("the hook kept no run id to rejoin");
    const partial = (await texts(page, "ai")).at(-1);
    if (partial === REPLY) fail("the reply was whole before the reload: pace the tokens slower");
    await page.reload();
    const rejoined = () => requests.find((r) => r.method === "GET" && r.url.includes(`/threads/${threadId}/runs/${runId}/stream`));
    await page.waitForFunction((reply) => [...document.querySelectorAll('p[data-type="ai"]')].some((p) => p.textContent === reply), REPLY, { timeout: 30000 });
    await settled(page);
    const join = rejoined();
    if (!join) fail(`the hook did not rejoin run ${runId}: ${JSON.stringify(requests.map((r) => `${r.method} ${r.url}`))}`);
    if (join.headers["last-event-id"] !== "-1") fail(`the rejoin sent Last-Event-ID ${join.headers["last-event-id"]}`);
    const kept = await page.evaluate((t) => sessionStorage.getItem(`lg:stream:${t}`), threadId);
    if (kept) fail("the run id is still kept after the rejoined run ended");
    const humans = await texts(page, "human");
    if (humans.length !== 1 || humans[0] !== "hi") fail(`the conversation after the rejoin: ${JSON.stringify(humans)}`);
    if (errors.length) fail(errors.join("\n"));
    await page.screenshot({ path: `${shots}/usestream-rejoin.png` });
    return `reloaded at "${partial}", the hook rejoined run ${runId} (Last-Event-ID: -1) and rendered "${REPLY}"`;
  },

  async resume() {
    const { page, errors, requests } = await open(pageUrl("hitl", { input: "topic" }));
    await send(page, "tea");
    await page.waitForSelector("#interrupt", { timeout: 30000 });
    await settled(page);
    const question = await page.textContent("#question");
    if (question !== "ok?") fail(`the interrupt's question is ${JSON.stringify(question)}`);
    await page.fill('input[aria-label="answer"]', "yes");
    await page.click("text=Resume");
    await page.waitForFunction(() => JSON.parse(document.getElementById("values").textContent || "{}").log?.length === 2, null, { timeout: 30000 });
    await settled(page);
    const values = JSON.parse(await page.textContent("#values"));
    if (JSON.stringify(values.log) !== JSON.stringify(["a:tea", "ask:yes"])) fail(`the state after the resume: ${JSON.stringify(values)}`);
    if (await page.$("#interrupt")) fail("the interrupt is still shown after the run ended");
    const resumed = requests.filter((r) => r.method === "POST" && r.url.endsWith("/runs/stream")).length;
    if (resumed !== 2) fail(`${resumed} runs were streamed, not 2`);
    if (errors.length) fail(errors.join("\n"));
    await page.screenshot({ path: `${shots}/usestream-resume.png` });
    return `the interrupt "${question}" was answered with command.resume and the run ended with ${JSON.stringify(values.log)}`;
  },

  async branch() {
    const { page, errors } = await open(pageUrl("chatbot", { history: "1" }));
    await send(page, "hi");
    await page.waitForFunction((reply) => [...document.querySelectorAll('p[data-type="ai"]')].some((p) => p.textContent === reply), REPLY, { timeout: 30000 });
    await settled(page);
    await page.waitForSelector("text=Edit");
    await page.click("text=Edit");
    await page.fill('input[aria-label="edit"]', "hi again");
    await page.click("text=Save");
    await page.waitForFunction(() => document.querySelector('p[data-type="human"]')?.textContent === "hi again", null, { timeout: 30000 });
    await settled(page);
    await page.waitForSelector('.branches[data-branches="2"]', { timeout: 30000 });
    const after = { humans: await texts(page, "human"), ais: await texts(page, "ai") };
    if (JSON.stringify(after.humans) !== '["hi again"]' || JSON.stringify(after.ais) !== JSON.stringify([REPLY])) {
      fail(`the edited branch shows ${JSON.stringify(after)}`);
    }
    const at = await page.getAttribute(".branches", "data-branch");
    if (at !== "2") fail(`the edited branch is shown as branch ${at} of 2`);
    await page.click(".branches button >> text=‹");
    await page.waitForFunction(() => document.querySelector('p[data-type="human"]')?.textContent === "hi", null, { timeout: 30000 });
    const back = { humans: await texts(page, "human"), ais: await texts(page, "ai") };
    if (JSON.stringify(back.humans) !== '["hi"]' || JSON.stringify(back.ais) !== JSON.stringify([REPLY])) {
      fail(`the first branch shows ${JSON.stringify(back)}`);
    }
    if (errors.length) fail(errors.join("\n"));
    await page.screenshot({ path: `${shots}/usestream-branch.png` });
    return `editing the first message made branch 2 of 2 ("hi again"), and setBranch went back to "hi"`;
  },
};

let failed = null;
for (const name of scenarios) {
  if (!run[name]) { failed = new Error(`no scenario ${name}: ${Object.keys(run).join(", ")}`); break; }
  try {
    console.log(`ok - ${name}: ${await run[name]()}`);
  } catch (e) {
    failed = new Error(`${name}: ${e.message}`);
    break;
  }
}
await browser.close();
files.close();
if (failed) {
  console.error(`not ok - ${failed.message}`);
  process.exit(1);
}
