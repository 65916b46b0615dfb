// Connects to mirobody-server from nothing with the official TypeScript SDK's OAuth client.
//
//   node oauth_ts_client.mjs <mcp-url> <email> <password> <account-page-url> <marker>
//
// The client meets a 401, discovers the authorization server, registers, and sends the person
// to sign in and consent (headless Chromium, through oauth.mjs); `whoami` answers as that
// person, and `remember` keeps <marker> among that person's memories; after the access token's 2 s lifetime the client refreshes it; the person revokes the
// app on their access page and the next call fails. Prints OAUTH-TS-OK and a line of JSON.
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [mcpUrl, email, password, accountUrl, marker] = process.argv.slice(2);
const CALLBACK = 'http://127.0.0.1:45988/callback';
const APP = 'TypeScript SDK test client';
const report = { tokens_seen: [] };

class Provider {
  constructor() { this.saved = {}; this.redirects = []; }
  get redirectUrl() { return CALLBACK; }
  get clientMetadata() {
    return { client_name: APP, redirect_uris: [CALLBACK], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  state() { return 'ts-state-1'; }
  clientInformation() { return this.saved.client; }
  saveClientInformation(info) { this.saved.client = info; }
  tokens() { return this.saved.tokens; }
  saveTokens(tokens) { this.saved.tokens = tokens; report.tokens_seen.push(tokens.access_token); }
  saveCodeVerifier(v) { this.saved.verifier = v; }
  codeVerifier() { return this.saved.verifier; }
  redirectToAuthorization(url) {
    if (this.redirects.length) throw new Error('asked to sign in again after the app was revoked');
    const out = execFileSync(process.execPath, ['oauth.mjs', 'consent', url.href, email, password, CALLBACK],
      { cwd: new URL('.', import.meta.url).pathname, encoding: 'utf8', timeout: 120_000 });
    const answer = JSON.parse(out.trim().split('\n').pop());
    this.redirects.push(answer.redirect);
  }
}

const provider = new Provider();
const connect = async () => {
  const client = new Client({ name: 'mirobody-oauth-ts-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
  return { client, transport, done: client.connect(transport) };
};

try {
  // Connecting needs no sign-in (the server has public tools); a call of a tool that reads
  // the person's data is answered 401, and the SDK starts the authorization there.
  let { client, transport, done } = await connect();
  await done;
  try {
    await client.callTool({ name: 'whoami', arguments: {} });
    throw new Error('whoami answered without signing in');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  await client.close().catch(() => {});
  const back = new URL(provider.redirects[0]);
  report.iss = back.searchParams.get('iss');
  report.state = back.searchParams.get('state');
  await transport.finishAuth(back.searchParams.get('code'));
  // A session is its caller's: the signed-in client starts its own.
  ({ client, transport, done } = await connect());
  await done;
  const first = await client.callTool({ name: 'whoami', arguments: {} });
  if (first.isError) throw new Error(JSON.stringify(first));
  report.whoami = first.structuredContent ?? first.content?.[0]?.text;
  const kept = await client.callTool({ name: 'remember', arguments: { text: marker } });
  if (kept.isError) throw new Error(JSON.stringify(kept));
  await new Promise((r) => setTimeout(r, 3000));
  const second = await client.callTool({ name: 'whoami', arguments: {} });
  if (second.isError) throw new Error(JSON.stringify(second));
  if (new Set(report.tokens_seen).size < 2) throw new Error('the access token was not refreshed');
  const out = execFileSync(process.execPath, ['oauth.mjs', 'revoke', accountUrl, email, password, APP],
    { cwd: new URL('.', import.meta.url).pathname, encoding: 'utf8', timeout: 120_000 });
  report.revoke = JSON.parse(out.trim().split('\n').pop());
  try {
    await client.callTool({ name: 'whoami', arguments: {} });
    throw new Error('a call after the app was revoked still worked');
  } catch (e) {
    if (String(e.message).includes('still worked')) throw e;
    report.after_revoke = String(e.message).slice(0, 500);
  }
  report.tokens_seen = report.tokens_seen.length;
  console.log('OAUTH-TS-OK');
  console.log(JSON.stringify(report));
  await client.close().catch(() => {});
  process.exit(0);
} catch (e) {
  console.error(String(e && e.stack || e));
  process.exit(1);
}
