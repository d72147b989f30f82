// weir studio on a long, heavy thread (server/tests/big_thread: 10,000 checkpoints, a state of
// ~10 MB), in Debian's headless Chromium: opens the thread, measures the thread view's first
// paint (its header and the newest page of the timeline) and when the head's state and changes
// (computed by the server) are shown, scrolls the timeline to its bottom (a page loaded at each
// approach of the end) measuring the time and the longest frame, then opens the oldest
// checkpoint. Prints the figures, and what each API request took; fails only past generous
// bounds, which a loaded machine stays under. Usage: node perf.mjs BASE_URL THREAD_ID CHECKPOINTS SCREENSHOT_DIR

import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";

const [base, tid, count, shots] = process.argv.slice(2);
if (!shots) throw new Error("usage: node perf.mjs BASE_URL THREAD_ID CHECKPOINTS SCREENSHOT_DIR");
mkdirSync(shots, { recursive: true });
const checkpoints = Number(count);
const BOUND_MS = { firstPaint: 10000, scroll: 120000, frame: 2000, checkpoint: 10000 };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
const errors = [];
page.on("pageerror", (e) => errors.push(e.message));
page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
const figures = {};
const fail = (what) => { throw new Error(what); };

try {
  // The time is taken in the page, at the first animation frame that shows the element.
  const shownAt = async (selector, timeout) => (await page.waitForFunction(
    (s) => document.querySelector(s) ? performance.now() : false, selector, { polling: "raf", timeout })).jsonValue();
  await page.goto(`${base}/studio/#/threads/${tid}`);
  figures.firstPaint = await shownAt(".timeline .cp", BOUND_MS.firstPaint * 3);
  figures.headShown = await shownAt('[data-testid="detail"][data-checkpoint] [data-testid="diff"]', BOUND_MS.checkpoint * 3);
  figures.firstContentfulPaint = await page.evaluate(() => performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? null);
  const diff = await page.textContent('[data-testid="diff"]');
  if (!diff.includes(`+ /notes/${checkpoints - 1}: "note ${checkpoints - 1}: `)) fail(`the head's change is not shown: ${diff.slice(0, 300)}`);
  const state = await page.textContent('[data-testid="state"]');
  if (!state.includes('"$truncated"')) fail("the head's state is not shown abbreviated");
  figures.firstPageRows = await page.$eval(".timeline", (tl) => Number(tl.dataset.count));
  await page.screenshot({ path: `${shots}/big-thread.png` });

  const scrolled = await page.evaluate(async ([expected, limit]) => {
    const tl = document.querySelector(".timeline");
    const rows = () => Number(tl.dataset.count);
    let mostDrawn = 0;
    const frames = [];
    let last = performance.now();
    let running = true;
    const frame = (t) => { frames.push(t - last); last = t; if (running) requestAnimationFrame(frame); };
    requestAnimationFrame(frame);
    const start = performance.now();
    let scrolls = 0;
    const end = document.querySelector('[data-testid="timeline-end"]');
    while (!end.textContent && performance.now() - start < limit) {
      tl.scrollTop = tl.scrollHeight;
      scrolls++;
      await new Promise((ok) => requestAnimationFrame(() => setTimeout(ok, 0)));
      mostDrawn = Math.max(mostDrawn, tl.querySelectorAll(".cp").length);
    }
    const ms = performance.now() - start;
    running = false;
    return { ms, rows: rows(), mostDrawn, scrolls, frames: frames.length, longestFrame: Math.max(...frames),
      framesOver50ms: frames.filter((f) => f > 50).length, end: end.textContent };
  }, [checkpoints, BOUND_MS.scroll]);
  Object.assign(figures, { scrollToBottom: scrolled.ms, rows: scrolled.rows, mostDrawn: scrolled.mostDrawn, longestFrame: scrolled.longestFrame,
    framesOver50ms: scrolled.framesOver50ms, frames: scrolled.frames });
  if (scrolled.rows !== checkpoints) fail(`the timeline shows ${scrolled.rows} checkpoints after ${scrolled.ms} ms of scrolling, not ${checkpoints}`);
  if (!scrolled.end.includes(`${checkpoints} checkpoints`)) fail(`the timeline's end says "${scrolled.end}"`);
  // Only the rows in sight are drawn, however long the list.
  if (scrolled.mostDrawn > 150) fail(`the timeline drew ${scrolled.mostDrawn} rows at once`);

  const started = Date.now();
  await page.click(`.timeline .cp[data-index="${checkpoints - 1}"]`);
  await page.waitForSelector('[data-testid="detail"][data-step="0"]', { timeout: BOUND_MS.checkpoint * 3 });
  figures.oldestCheckpoint = Date.now() - started;
  const first = await page.textContent('[data-testid="diff"]');
  if (!first.includes("+ /title") || !first.includes("+ /notes")) fail(`the first checkpoint's changes: ${first.slice(0, 300)}`);
  await page.screenshot({ path: `${shots}/big-thread-bottom.png` });

  // What the server took: each API request's time, by route.
  const requests = await page.evaluate(() => performance.getEntriesByType("resource")
    .filter((r) => !r.name.includes("/studio/js/") && !r.name.endsWith(".css"))
    .map((r) => ({ route: new URL(r.name).pathname.replace(/[0-9a-f-]{36}/g, "ID"), start: r.startTime, ms: r.duration, bytes: r.transferSize })));
  const routes = {};
  for (const r of requests) (routes[r.route] ||= []).push(r);
  const ms = (v) => `${Math.round(v)} ms`;
  for (const [route, rs] of Object.entries(routes)) {
    const times = rs.map((r) => r.ms);
    const kb = Math.round(Math.max(...rs.map((r) => r.bytes)) / 1024);
    console.log(`figures: ${route}: ${rs.length} requests, ${ms(Math.min(...times))} to ${ms(Math.max(...times))} (mean ${ms(times.reduce((a, b) => a + b, 0) / times.length)}), at most ${kb} KiB`);
  }
  const early = requests.filter((r) => r.start < figures.firstPaint).map((r) => `${r.route} ${ms(r.start)}+${ms(r.ms)}`);
  console.log(`figures: the requests before the first paint: ${early.join(", ")}`);
  console.log(`figures: first paint of the thread view ${ms(figures.firstPaint)} (its header and newest ${figures.firstPageRows} checkpoints; the page's first contentful paint ${ms(figures.firstContentfulPaint)}); the head's state and changes shown at ${ms(figures.headShown)}`);
  console.log(`figures: the timeline scrolled to the bottom of ${figures.rows} checkpoints in ${ms(figures.scrollToBottom)} (at most ${figures.mostDrawn} rows drawn at once); longest frame ${ms(figures.longestFrame)}, ${figures.framesOver50ms} of ${figures.frames} frames over 50 ms`);
  console.log(`figures: the oldest checkpoint and its changes shown in ${ms(figures.oldestCheckpoint)}`);
  if (figures.firstPaint > BOUND_MS.firstPaint) fail(`first paint took ${ms(figures.firstPaint)}`);
  if (figures.scrollToBottom > BOUND_MS.scroll) fail(`scrolling to the bottom took ${ms(figures.scrollToBottom)}`);
  if (figures.longestFrame > BOUND_MS.frame) fail(`a frame took ${ms(figures.longestFrame)} while scrolling`);
  if (figures.headShown > BOUND_MS.firstPaint + BOUND_MS.checkpoint) fail(`the head was shown at ${ms(figures.headShown)}`);
  if (figures.oldestCheckpoint > BOUND_MS.checkpoint) fail(`the oldest checkpoint took ${ms(figures.oldestCheckpoint)}`);
  if (errors.length) fail(errors.join("\n"));
  console.log("ok - the timeline scrolled to the bottom, first paint and every frame within bounds");
} catch (e) {
  await page.screenshot({ path: `${shots}/big-thread-failed.png` }).catch(() => {});
  console.error(`not ok - ${e.message}`);
  console.log(JSON.stringify(figures));
  if (errors.length) console.error(`the page's errors:\n${errors.join("\n")}`);
  await browser.close();
  process.exit(1);
}
await browser.close();
