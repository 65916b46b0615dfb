// Drives the upload page in headless Chromium, as a person on a phone would.
//
//   node upload.mjs <upload-url> <file-path> [<screenshot.png>]
//
// Env: CHROMIUM (default /usr/bin/chromium), VIEWPORT (default 390x844).
// On success prints one line of JSON to stdout:
//   {"results":[{"file_key","has_text","text_pending","imported","import_complete","text"}],"errors":[...],"requests":N,"other_origins":[...]}
// and exits 0; exits 1 (page text on stderr) on timeout or exception, and also
// (after printing the JSON) when the page made a request to another origin.
import { chromium } from 'playwright-core';

const [url, filePath, shotPath] = process.argv.slice(2);
if (!url || !filePath) {
  console.error('usage: node upload.mjs <upload-url> <file-path> [<screenshot.png>]');
  process.exit(2);
}
const origin = new URL(url).origin;
const [vw, vh] = (process.env.VIEWPORT || '390x844').split('x').map(Number);

const requests = [];
const otherOrigins = new Set();
function record(req) {
  const u = req.url();
  requests.push(u);
  if (/^(data|blob|about):/.test(u)) return;
  let o;
  try { o = new URL(u).origin; } catch { o = u; }
  if (o !== origin) otherOrigins.add(o);
}

let browser;
let page;
let code = 0;
try {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    timeout: 30_000,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  const context = await browser.newContext({ viewport: { width: vw || 390, height: vh || 844 } });
  page = await context.newPage();
  page.on('request', record);

  const resp = await page.goto(url, { waitUntil: 'load', timeout: 30_000 });
  if (!resp || !resp.ok()) throw new Error(`GET ${url} answered ${resp ? resp.status() : 'nothing'}`);
  await page.setInputFiles('input[type=file]', filePath);
  await page.click('#upload', { timeout: 5_000 });
  await page.waitForSelector('#done', { timeout: 30_000 });

  const results = await page.$$eval('.result', (els) => els.map((e) => ({
    file_key: e.getAttribute('data-file-key'),
    has_text: e.getAttribute('data-has-text') === 'true',
    text_pending: e.getAttribute('data-text-pending') === 'true',
    imported: e.getAttribute('data-imported'),
    import_complete: e.getAttribute('data-import-complete'),
    text: e.textContent,
  })));
  const errors = await page.$$eval('.error', (els) => els.map((e) => e.textContent));
  if (shotPath) await page.screenshot({ path: shotPath, fullPage: true });

  const other = [...otherOrigins];
  process.stdout.write(JSON.stringify({ results, errors, requests: requests.length, other_origins: other }) + '\n');
  if (other.length) {
    console.error(`the page made requests to other origins: ${other.join(', ')}`);
    code = 1;
  }
} catch (err) {
  console.error(`upload driver failed: ${err && err.stack ? err.stack : err}`);
  if (page) {
    try {
      console.error('--- page body text ---\n' + (await page.innerText('body', { timeout: 2_000 })));
    } catch { /* the page is gone */ }
    if (shotPath) await page.screenshot({ path: shotPath, fullPage: true }).catch(() => {});
  }
  code = 1;
} finally {
  if (browser) await browser.close().catch(() => {});
}
process.exit(code);
