// The studio's chat view in a real browser: Debian's headless Chromium, driven by Playwright,
// against the example server (its `chatbot` streams a fake model's tokens a pace apart) that
// server/tests/studio.rs started. Usage: node chat.mjs BASE_URL EXPECTED_REPLY SCREENSHOT_DIR.
// Sends a message and checks that the reply grew token by token before it was whole. Exits
// non-zero naming what was not as expected.

import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";

const [base, expected, shots] = process.argv.slice(2);
if (!shots) throw new Error("usage: node chat.mjs BASE_URL EXPECTED_REPLY SCREENSHOT_DIR");
mkdirSync(shots, { recursive: true });

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
let failed = null;
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${base}/studio`);
  await page.click('[data-assistant="chatbot"]');
  await page.waitForSelector('[data-testid="chat"]');
  // Every change to the chat's AI bubbles is recorded, so the test can tell a reply that grew
  // from one that arrived whole.
  await page.evaluate(() => {
    window.seen = [];
    const log = document.querySelector('[data-testid="chat"]');
    new MutationObserver(() => {
      for (const b of log.querySelectorAll(".msg.ai")) window.seen.push(b.firstChild ? b.textContent : "");
    }).observe(log, { childList: true, subtree: true, characterData: true });
  });
  await page.fill('[data-testid="chat"] ~ .row input[aria-label="message"]', "hi");
  await page.click('[data-testid="send"]');
  await page.waitForFunction((text) => [...document.querySelectorAll('[data-testid="chat"] .msg.ai')]
    .some((b) => b.textContent === text), expected, { timeout: 30000 });
  await page.waitForFunction(() => !document.querySelector('[data-testid="send"]').disabled, null, { timeout: 30000 });
  const partial = [...new Set(await page.evaluate(() => window.seen))].filter((s) => s && s !== expected);
  if (!partial.some((s) => expected.startsWith(s))) {
    throw new Error(`the reply did not grow token by token (seen: ${JSON.stringify(partial)})`);
  }
  const humans = await page.$$eval('[data-testid="chat"] .msg.human', (ps) => ps.map((p) => p.textContent));
  if (humans.join("|") !== "hi") throw new Error(`the conversation shows ${JSON.stringify(humans)} from the person`);
  if (errors.length) throw new Error(errors.join("\n"));
  await page.screenshot({ path: `${shots}/chat.png`, fullPage: true });
  console.log(`ok - the studio's chat grew through ${partial.length} partial replies to "${expected}"`);
} catch (e) {
  failed = e;
} finally {
  await browser.close();
}
if (failed) {
  console.error(`not ok - ${failed.message}`);
  process.exit(1);
}
