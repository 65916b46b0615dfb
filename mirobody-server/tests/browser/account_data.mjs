// A person takes their data out and deletes it on the access page, in headless Chromium:
// signs in with the password, downloads everything, deletes their file and their import,
// asks to delete the account, types a wrong email, then their own.
//
//   node account_data.mjs <base-url> <email> <password> <download-path>
//       Saves the download at <download-path> and prints {"download_name", "file_deleted",
//       "import_deleted", "confirmation", "wrong_email", "deleted", "after", "problems"}.
//
// Env: CHROMIUM (default /usr/bin/chromium). Exits 1 with the page's text on stderr when a
// step fails.
import { chromium } from 'playwright-core';

const [base, email, password, downloadPath] = process.argv.slice(2);
if (!base || !email || !password || !downloadPath) {
  console.error('usage: node account_data.mjs <base-url> <email> <password> <download-path>');
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  timeout: 30_000,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run'],
});
const context = await browser.newContext({ acceptDownloads: true });
const page = await context.newPage();
page.setDefaultTimeout(20_000);
const problems = [];
// The wrong email answers 400, which the console reports as a failed resource.
page.on('console', (m) => {
  if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text());
});
page.on('pageerror', (e) => problems.push(String(e)));
let code = 0;

async function submit(button) {
  await Promise.all([page.waitForLoadState('load'), button.click()]);
  await page.waitForLoadState('load');
}

try {
  await page.goto(`${base}/signin`);
  await page.fill('input[name=email]', email);
  await page.fill('input[name=password]', password);
  await submit(page.locator('form button[type=submit]').first());
  if (!page.url().includes('/account')) throw new Error(`sign-in failed; at ${page.url()}`);

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('#data-export button').click(),
  ]);
  await download.saveAs(downloadPath);
  const downloadName = download.suggestedFilename();

  await submit(page.locator('#data-files button').first());
  const fileDeleted = await page.locator('p.notice').innerText();
  await submit(page.locator('#data-imports button').first());
  const importDeleted = await page.locator('p.notice').innerText();

  await submit(page.locator('#account-delete button'));
  const confirmation = await page.locator('main').innerText();
  await page.fill('#confirm', 'someone.else@example.com');
  await submit(page.locator('#account-delete-confirm button'));
  const wrongEmail = await page.locator('p.error').innerText();
  await page.fill('#confirm', email);
  await submit(page.locator('#account-delete-confirm button'));
  const deleted = await page.locator('main').innerText();

  await page.goto(`${base}/account`);
  const after = page.url();

  console.log(JSON.stringify({
    download_name: downloadName,
    file_deleted: fileDeleted,
    import_deleted: importDeleted,
    confirmation,
    wrong_email: wrongEmail,
    deleted,
    after,
    problems,
  }));
} catch (e) {
  console.error(String(e));
  try {
    console.error(await page.locator('body').innerText());
  } catch {}
  code = 1;
} finally {
  await browser.close();
}
process.exit(code);
