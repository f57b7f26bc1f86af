// The page of `rag.py serve` in a real headless browser: type a question, get the
// answer with its [n] citations and sources, click a citation (or, when the model
// cited nothing, a source), see its passage; then a follow-up, answered in the same
// thread with its own sources and what it was searched as. Exit 1 if any of that is missing.
//   node .ci/page_check.mjs http://127.0.0.1:8000/ shot.png
// Needs Debian's chromium (/usr/bin/chromium) and `npm install playwright-core`.
import { chromium } from "playwright-core";

const [url, shot] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium" });
const page = await browser.newPage({ viewport: { width: 390, height: 844 } }); // a phone
const external = [];
page.on("request", r => { if (!r.url().startsWith(new URL(url).origin)) external.push(r.url()); });
await page.goto(url);
async function ask(question, n) {
  await page.fill("#q", question);
  await page.press("#q", "Enter");
  const turn = `#thread .turn:nth-child(${n})`;
  await page.waitForFunction(t => { const e = document.querySelector(t + " .uncited");
    return e && e.textContent; }, turn, { timeout: 60000 });
  const answer = await page.textContent(turn + " .answer");
  const sources = await page.$$eval(turn + " .sources li", els => els.map(e => e.textContent));
  const cites = await page.$$(turn + " .answer .cite");
  await (cites.length ? cites[0] : await page.$(turn + " .sources li button")).click(); // a model may cite nothing
  await page.waitForSelector(turn + " .passage .where");
  const passage = await page.textContent(turn + " .passage");
  const searched = await page.textContent(turn + " .searched");
  return { question, answer, citations: cites.length, sources, searched, passage: passage.slice(0, 120) };
}
const first = await ask("How do I request a refund?", 1);
const follow = await ask("How long does it take?", 2);
await page.screenshot({ path: shot, fullPage: true });
const turns = await page.$$eval("#thread .turn", els => els.length);
console.log(JSON.stringify({ first, follow, turns, external }, null, 1));
await browser.close();
const good = t => t.answer.trim() && t.sources.length && t.passage;
if (!good(first) || !good(follow) || !follow.searched || turns !== 2 || external.length) process.exit(1);
