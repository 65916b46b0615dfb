// Drives the upload page in headless Chromium with two files picked at once on a link that
// stores one, then opens the link again.
//
//   node upload_spent.mjs <upload-url> <first-file> <second-file>
//
// Env: CHROMIUM (default /usr/bin/chromium). On success prints one line of JSON to stdout:
//   {"results":[file_key...],"errors":[text...],"done":text,"input_disabled":bool,"reopened":status}
// and exits 0; exits 1 (page text on stderr) on timeout or exception.
import { chromium } from 'playwright-core';

const [url, first, second] = process.argv.slice(2);
if (!url || !first || !second) {
  console.error('usage: node upload_spent.mjs <upload-url> <first-file> <second-file>');
  process.exit(2);
}

let browser;
let page;
let code = 0;
try {
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    timeout: 30_000,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  page = await (await browser.newContext()).newPage();
  const resp = await page.goto(url, { waitUntil: 'load', timeout: 30_000 });
  if (!resp || !resp.ok()) throw new Error(`GET ${url} answered ${resp ? resp.status() : 'nothing'}`);
  await page.setInputFiles('input[type=file]', [first, second]);
  await page.click('#upload', { timeout: 5_000 });
  await page.waitForSelector('#done', { timeout: 30_000 });
  const results = await page.$$eval('.result', (els) => els.map((e) => e.getAttribute('data-file-key')));
  const errors = await page.$$eval('.error', (els) => els.map((e) => e.textContent));
  const done = await page.textContent('#done');
  const inputDisabled = await page.isDisabled('input[type=file]');
  const again = await page.goto(url, { waitUntil: 'load', timeout: 30_000 });
  process.stdout.write(JSON.stringify({
    results, errors, done, input_disabled: inputDisabled, reopened: again ? again.status() : 0,
  }) + '\n');
} catch (err) {
  console.error(`upload driver failed: ${err && err.stack ? err.stack : err}`);
  if (page) {
    try {
      console.error('--- page body text ---\n' + (await page.innerText('body', { timeout: 2_000 })));
    } catch { /* the page is gone */ }
  }
  code = 1;
} finally {
  if (browser) await browser.close().catch(() => {});
}
process.exit(code);
