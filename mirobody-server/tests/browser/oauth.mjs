// Signs a person in and answers the consent page in headless Chromium, as a person connecting
// an app would; or revokes an app on the person's access page.
//
//   node oauth.mjs consent <authorize-url> <email> <password> <redirect-prefix> [follow]
//       Prints {"redirect": "<the URL the browser was sent back to>", "consent": {...}}.
//       Without `follow` the redirect is caught (nothing listens there); with it, the browser
//       goes on to it (a callback server that waits for it, as the conformance package's).
//   node oauth.mjs revoke <account-url> <email> <password> <app-name>
//       Prints {"revoked": true, "apps_left": N}.
//
// Env: CHROMIUM (default /usr/bin/chromium). Exits 1 with the page's text on stderr when a
// step fails.
import { chromium } from 'playwright-core';

const [mode, url, email, password, extra, follow] = process.argv.slice(2);
if (!['consent', 'revoke'].includes(mode) || !url || !email || !password || !extra) {
  console.error('usage: node oauth.mjs consent|revoke <url> <email> <password> <redirect-prefix|app-name> [follow]');
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  timeout: 30_000,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run'],
});
let code = 0;
const page = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
page.setDefaultTimeout(20_000);
try {
  let caught = null;
  if (mode === 'consent' && follow !== 'follow') {
    await page.route((u) => u.href.startsWith(extra), (route) => {
      caught = route.request().url();
      route.fulfill({ status: 200, contentType: 'text/plain', body: 'caught' });
    });
  }
  await page.goto(url);
  // The sign-in page, when the browser is not signed in yet.
  if (await page.locator('input[name=password]').count()) {
    await page.fill('input[name=email]', email);
    await page.fill('input[name=password]', password);
    await Promise.all([page.waitForLoadState('load'), page.locator('form button[type=submit]').first().click()]);
    await page.waitForLoadState('load');
  }
  if (mode === 'consent') {
    const allow = page.locator('button[value=allow]');
    await allow.waitFor();
    const consent = {
      title: await page.title(),
      text: (await page.locator('main').innerText()).slice(0, 2000),
    };
    await allow.click();
    const deadline = Date.now() + 20_000;
    while (!caught && !page.url().startsWith(extra) && Date.now() < deadline) {
      await page.waitForTimeout(50);
    }
    const redirect = caught || (page.url().startsWith(extra) ? page.url() : null);
    if (!redirect) throw new Error(`never sent back to ${extra}; at ${page.url()}`);
    console.log(JSON.stringify({ redirect, consent }));
  } else {
    const row = page.locator('li', { hasText: extra }).filter({ has: page.locator('input[name=grant]') });
    await row.first().waitFor();
    await Promise.all([page.waitForLoadState('load'), row.first().locator('button').first().click()]);
    await page.waitForLoadState('load');
    await page.goto(url);
    const left = await page.locator('input[name=grant]').count();
    console.log(JSON.stringify({ revoked: true, apps_left: left }));
  }
} catch (e) {
  code = 1;
  console.error(String(e && e.stack || e));
  try { console.error((await page.locator('body').innerText()).slice(0, 3000)); } catch {}
} finally {
  await browser.close();
}
process.exit(code);
