// weir studio in a real browser: Debian's headless Chromium, driven by Playwright, against the
// server that server/tests/studio.rs started. Usage: node studio.mjs BASE_URL SCREENSHOT_DIR
// Runs the support-triage flow to its interrupt, answers it in the form, watches the run finish
// and the timeline grow, sees a run made by another client appear live, forks from step 2, and
// saves a screenshot of each view. Exits non-zero, naming the step, at the first thing that is
// not as expected.

import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";

const [base, shots] = process.argv.slice(2);
if (!base || !shots) throw new Error("usage: node studio.mjs BASE_URL SCREENSHOT_DIR");
mkdirSync(shots, { recursive: true });

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
const errors = [];
page.on("pageerror", (e) => errors.push(e.message));
page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
const shot = (name) => page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });

async function step(name, body) {
  try {
    await body();
    console.log(`ok - ${name}`);
  } catch (e) {
    await shot(`failed-${name.replace(/\W+/g, "_")}`).catch(() => {});
    console.error(`not ok - ${name}: ${e.message}`);
    await browser.close();
    process.exit(1);
  }
}

const expect = (cond, what) => { if (!cond) throw new Error(what); };

await step("the assistants page lists the served flow", async () => {
  const started = Date.now();
  await page.goto(`${base}/studio`);
  await page.waitForSelector('[data-assistant="support_triage"]');
  console.log(`first paint of the assistants page: ${Date.now() - started} ms`);
  await shot("assistants");
});

await step("the graph is drawn from the flow's structure", async () => {
  await page.click('[data-assistant="support_triage"]');
  await page.waitForSelector('svg.graph [data-node="classify"]');
  for (const node of ["__start__", "check_amount", "approval", "send", "__end__"]) {
    expect(await page.$(`svg.graph [data-node="${node}"]`), `node ${node} is not drawn`);
  }
  expect(await page.$$eval("svg.graph path.edge.conditional", (e) => e.length) >= 5, "the routes are not drawn as conditional edges");
});

await step("a run from the launcher pauses at the approval and lights the nodes it ran", async () => {
  await page.fill("#f-customer", "Ada");
  await page.fill("#f-subject", "Refund please");
  await page.fill("#f-body", "I want my money back");
  await page.fill("#f-amount", "120");
  await page.click('[data-testid="run"]');
  await page.waitForSelector('[data-testid="run-done"]');
  const done = await page.textContent('[data-testid="run-done"]');
  expect(done.includes("paused"), `the run did not pause: ${done}`);
  for (const node of ["classify", "check_amount"]) {
    const cls = await page.getAttribute(`svg.graph [data-node="${node}"]`, "class");
    expect(cls.includes("done"), `${node} is not lit as done (class "${cls}")`);
  }
  const approval = await page.getAttribute('svg.graph [data-node="approval"]', "class");
  expect(approval.includes("done"), `approval is not lit as done (class "${approval}")`);
  const ask = await page.getAttribute('svg.graph [data-node="approval#ask"]', "class");
  expect(ask.includes("paused"), `the question's node is not lit as paused (class "${ask}")`);
  expect((await page.textContent('[data-testid="events"]')).includes("tasks"), "no tasks event was shown");
  await shot("graph-run");
});

/** The checkpoints the timeline lists (it draws only the rows in sight). */
const checkpointCount = () => page.$eval(".timeline", (tl) => Number(tl.dataset.count));

let before = 0;
await step("the thread shows the interrupt with its choices", async () => {
  await page.click('[data-testid="run-done"] a');
  await page.waitForSelector('[data-testid="interrupt"]');
  expect((await page.textContent('[data-testid="interrupt"]')).includes("Refund 120"), "the question is not shown");
  before = await checkpointCount();
  expect(before >= 3, `only ${before} checkpoints in the timeline`);
  expect((await page.textContent('[data-testid="thread-status"]')).includes("interrupted"), "the thread is not interrupted");
  await shot("thread-interrupt");
});

await step("answering in the form finishes the run and grows the timeline", async () => {
  await page.click('[data-choice="approve"]');
  await page.waitForSelector('[data-testid="run-finished"]');
  await page.waitForFunction((n) => Number(document.querySelector(".timeline").dataset.count) > n, before);
  await page.waitForFunction(() => document.querySelector('[data-testid="thread-status"]').textContent.includes("idle"));
  // The header is drawn before the head's state is read: wait for the detail to show the newest checkpoint.
  await page.waitForFunction(() => {
    const newest = document.querySelector('.timeline .cp[data-index="0"]');
    return newest && document.querySelector('[data-testid="detail"]').dataset.checkpoint === newest.dataset.checkpoint;
  });
  const state = JSON.parse(await page.textContent('[data-testid="state"]'));
  expect(state.status === "refunded", `the state's status is ${state.status}`);
  expect(!(await page.$('[data-testid="interrupt"]')), "the interrupt is still shown");
  await shot("thread-done");
});

await step("a checkpoint shows its changes from the parent", async () => {
  // Step 4 is the approval's: it wrote the question to the transcript.
  await page.click('.timeline .cp[data-step="4"]');
  await page.waitForSelector('[data-testid="detail"][data-step="4"]');
  const diff = await page.textContent('[data-testid="diff"]');
  expect(diff.includes("+ /transcript/0") && diff.includes("Refund 120 EUR"), `the approval's write is not shown: ${diff}`);
  await shot("checkpoint-diff");
});

await step("a run made elsewhere shows up as it ends, the chosen checkpoint kept", async () => {
  const tid = decodeURIComponent(page.url().split("#/threads/")[1]);
  const count = await checkpointCount();
  // Another client (the SDK, a cron) runs the thread: a small refund, which needs no approval.
  const res = await fetch(`${base}/threads/${tid}/runs/wait`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ assistant_id: "support_triage",
      input: { customer: "Bo", subject: "Refund", body: "Small one", amount: 20 } }),
  });
  expect(res.ok, `the run was refused: ${res.status} ${await res.text()}`);
  await page.waitForFunction((n) => Number(document.querySelector(".timeline").dataset.count) > n, count);
  await page.waitForFunction(() => document.querySelector('[data-testid="thread-status"]').textContent.includes("idle"));
  await page.waitForTimeout(500);
  const step = await page.getAttribute('[data-testid="detail"]', "data-step");
  expect(step === "4", `the chosen checkpoint (step 4) was not kept: step ${step} is shown`);
  await shot("thread-live");
});

await step("forking from step 2 runs again from there", async () => {
  const count = await checkpointCount();
  await page.click('.timeline .cp[data-step="2"]');
  await page.waitForSelector('[data-testid="detail"][data-step="2"]');
  await page.click('[data-testid="fork"]');
  await page.waitForFunction((n) => Number(document.querySelector(".timeline").dataset.count) > n, count);
  await page.waitForSelector('[data-testid="interrupt"]');
  await shot("fork");
});

await step("the threads page finds the thread by status", async () => {
  await page.goto(`${base}/studio/#/threads`);
  await page.selectOption('select[aria-label="status"]', "interrupted");
  await page.click("text=Search");
  await page.waitForSelector("[data-thread]");
  await shot("threads");
});

await step("the page logged no error", async () => {
  expect(errors.length === 0, errors.join("\n"));
});
await browser.close();
