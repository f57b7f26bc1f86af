// The page of `rag.py serve` in a real headless browser: type a question, get the
// answer with its [n] citations and sources, click a citation (or, when the model
// cited nothing, a source), see its passage. Exit 1 if any of that is missing.
//   node .ci/page_check.mjs http://127.0.0.1:8000/ shot.png
// Needs Debian's chromium (/usr/bin/chromium) and `npm install playwright-core`.
import { chromium } from "playwright-core";

const [url, shot] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium" });
const page = await browser.newPage({ viewport: { width: 390, height: 844 } }); // a phone
const external = [];
page.on("request", r => { if (!r.url().startsWith(new URL(url).origin)) external.push(r.url()); });
await page.goto(url);
await page.fill("#q", "How long does a refund take?");
await page.press("#q", "Enter");
await page.waitForSelector("#sources li button", { timeout: 60000 });
const answer = await page.textContent("#answer");
const sources = await page.$$eval("#sources li", els => els.map(e => e.textContent));
const cites = await page.$$("#answer .cite");
await (cites.length ? cites[0] : await page.$("#sources li button")).click(); // a model may cite nothing
await page.waitForSelector("#passage .where");
const passage = await page.textContent("#passage");
await page.screenshot({ path: shot, fullPage: true });
const note = await page.textContent("#note");
console.log(JSON.stringify({ answer, citations: cites.length, note, sources, passage: passage.slice(0, 160), external }, null, 1));
await browser.close();
if (!answer.trim() || !sources.length || !passage || external.length) process.exit(1);
