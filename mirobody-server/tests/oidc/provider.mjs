// A local OpenID provider for the sign-in-with-a-provider test: panva's oidc-provider (an
// OpenID-certified implementation) with its development login and consent pages, one client
// and the accounts the test gives.
//
//   OIDC_ACCOUNTS='{"sub": {"email": "...", "email_verified": true, "name": "..."}}' \
//     node provider.mjs <client-id> <client-secret> <redirect-uri>
//
// Listens on a free loopback port and prints {"issuer": "http://127.0.0.1:PORT"} once it does.
// Anyone may "log in" as any account id at its login page (any password): that id is the
// subject, with the claims OIDC_ACCOUNTS gives it.
import http from 'node:http';
import Provider from 'oidc-provider';

const [clientId, clientSecret, redirectUri] = process.argv.slice(2);
if (!clientId || !clientSecret || !redirectUri) {
  console.error('usage: node provider.mjs <client-id> <client-secret> <redirect-uri>');
  process.exit(2);
}
const accounts = JSON.parse(process.env.OIDC_ACCOUNTS || '{}');

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // The scopes' claims in the ID token itself, as Google and Keycloak give them.
  conformIdTokenClaims: false,
  findAccount: (ctx, sub) => ({
    accountId: sub,
    claims: () => ({ sub, ...(accounts[sub] || {}) }),
  }),
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['mirobody test provider cookie key'] },
});
// Its development keys and pages are the point here; their warnings are not.
provider.on('server_error', (ctx, error) => console.error('provider error:', error));
server.on('request', provider.callback());
console.log(JSON.stringify({ issuer }));
