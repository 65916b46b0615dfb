// Signs a person in to mirobody through an OpenID provider in headless Chromium: opens the
// sign-in page, follows its provider button, logs in at the provider's development login page
// as <login> (any password), allows the provider's consent page, and reports where the
// browser ended up.
//
//   node oidc_signin.mjs <signin-url> <provider-name> <login>
//       Prints {"url": "<final URL>", "title": "...", "text": "<the page's main text>"}.
//
// Env: CHROMIUM (default /usr/bin/chromium). Exits 1 with the page's text on stderr when a
// step fails.
import { chromium } from 'playwright-core';

const [signin, providerName, login] = process.argv.slice(2);
if (!signin || !providerName || !login) {
  console.error('usage: node oidc_signin.mjs <signin-url> <provider-name> <login>');
  process.exit(2);
}
const home = new URL(signin).origin;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  timeout: 30_000,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run'],
});
let code = 0;
const page = await (await browser.newContext()).newPage();
page.setDefaultTimeout(20_000);
try {
  await page.goto(signin);
  await Promise.all([page.waitForURL((u) => u.origin !== home), page.getByText(`Sign in with ${providerName}`).click()]);
  // The provider's login page, then its consent page ("Continue") if it asks.
  await page.fill('input[name=login]', login);
  await page.fill('input[name=password]', 'any password');
  await Promise.all([page.waitForLoadState('load'), page.locator('button[type=submit]').first().click()]);
  const deadline = Date.now() + 20_000;
  while (new URL(page.url()).origin !== home && Date.now() < deadline) {
    const allow = page.locator('input[name=prompt][value=consent] ~ button[type=submit]');
    if (await allow.count()) {
      await Promise.all([page.waitForLoadState('load'), allow.first().click()]);
    } else {
      await page.waitForTimeout(50);
    }
  }
  if (new URL(page.url()).origin !== home) throw new Error(`never sent back to ${home}; at ${page.url()}`);
  await page.waitForLoadState('load');
  const text = (await page.locator('main').innerText()).slice(0, 4000);
  console.log(JSON.stringify({ url: page.url(), title: await page.title(), text }));
} catch (error) {
  let text = '';
  try { text = (await page.locator('body').innerText()).slice(0, 2000); } catch {}
  console.error(`${error.message}\nat ${page.url()}\n${text}`);
  code = 1;
} finally {
  await browser.close();
}
process.exit(code);
