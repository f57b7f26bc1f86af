// The page of `rag.py serve` in a real headless browser: type a question, get the
// answer with its [n] citations and sources, click a source, see its passage.
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
await page.click("#answer .cite");
await page.waitForSelector("#passage .where");
const passage = await page.textContent("#passage");
await page.screenshot({ path: shot, fullPage: true });
console.log(JSON.stringify({ answer, sources, passage: passage.slice(0, 160), external }, null, 1));
await browser.close();
if (!answer.includes("[1]") || !sources.length || !passage || external.length) process.exit(1);
