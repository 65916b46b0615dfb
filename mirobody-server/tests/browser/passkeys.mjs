// A person adds a passkey and signs in with it, in headless Chromium with a virtual
// authenticator (CDP's WebAuthn domain: a platform authenticator that keeps discoverable
// credentials and verifies its user without a prompt).
//
//   node passkeys.mjs <base-url> <email> <password>
//       Prints {"added": ..., "signed_in_as": ..., "removed": ..., "refused": ...}.
//
// The base URL must be http://localhost:<port>: WebAuthn needs a secure context (localhost is
// one) and a relying party id that is a domain. Env: CHROMIUM (default /usr/bin/chromium).
// Exits 1 with the page's text on stderr when a step fails.
import { chromium } from 'playwright-core';

const [base, email, password] = process.argv.slice(2);
if (!base || !email || !password) {
  console.error('usage: node passkeys.mjs <base-url> <email> <password>');
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  timeout: 30_000,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run'],
});
const context = await browser.newContext();
const page = await context.newPage();
page.setDefaultTimeout(20_000);
const problems = [];
// A refused fetch logs its status as an error; that one is expected at the end.
page.on('console', (m) => {
  if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text());
});
page.on('pageerror', (e) => problems.push(String(e)));
let code = 0;

async function submit(button) {
  await Promise.all([page.waitForLoadState('load'), button.click()]);
  await page.waitForLoadState('load');
}

async function signOut() {
  await submit(page.locator('form button', { hasText: /^Sign out$/ }));
  if (!page.url().includes('/signin')) throw new Error(`not signed out; at ${page.url()}`);
}

async function passkeyButton() {
  const button = page.locator('#passkey-signin button');
  await button.waitFor({ state: 'visible' });
  await button.click();
}

try {
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });

  // A password first: passkeys are added on the access page.
  await page.goto(`${base}/signin`);
  await page.fill('input[name=email]', email);
  await page.fill('input[name=password]', password);
  await submit(page.locator('form button[type=submit]').first());
  if (!page.url().includes('/account')) throw new Error(`password sign-in failed; at ${page.url()}`);

  await page.locator('#passkey-add').waitFor({ state: 'visible' });
  await page.fill('#passkey-name', 'Test laptop');
  await page.locator('#passkey-add button').click();
  await page.waitForURL(/done=passkey-added/);
  const added = await page.locator('#passkeys').innerText();
  if (!added.includes('Test laptop')) throw new Error(`the passkey is not listed: ${added}`);
  const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
  if (credentials.length !== 1 || !credentials[0].isResidentCredential) {
    throw new Error(`the authenticator holds ${JSON.stringify(credentials)}`);
  }

  // Signed out, the passkey alone signs in, as that person.
  await signOut();
  await passkeyButton();
  await page.waitForURL(/\/account/);
  const signedInAs = (await page.locator('main .card').first().innerText()).trim();
  if (!signedInAs.includes(email)) throw new Error(`signed in as someone else: ${signedInAs}`);
  const used = await page.locator('#passkeys').innerText();
  if (used.includes('Last used never')) throw new Error(`the use is not noted: ${used}`);

  // Removed, it signs in no more, and the page says why.
  await submit(page.locator('#passkeys form button', { hasText: 'Remove' }));
  if (!page.url().includes('done=passkey-removed')) throw new Error(`not removed; at ${page.url()}`);
  const removed = (await page.locator('main').innerText()).includes('You have no passkey');
  await signOut();
  await passkeyButton();
  const error = page.locator('#passkey-signin p.error');
  await error.waitFor({ state: 'visible' });
  const refused = (await error.innerText()).trim();
  if (!page.url().includes('/signin')) throw new Error(`a removed passkey signed in; at ${page.url()}`);
  console.log(JSON.stringify({ added: added.trim(), signed_in_as: signedInAs, used: used.trim(), removed, refused, problems }));
} catch (e) {
  code = 1;
  let text = '';
  try { text = (await page.locator('body').innerText()).slice(0, 2000); } catch {}
  console.error(`${e.stack || e}\nat ${page.url()}\n${text}\nconsole: ${problems.join('\n')}`);
} finally {
  await browser.close();
}
process.exit(code);
