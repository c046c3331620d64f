// A small OpenID provider for Docket's tests: oidc-provider with one client, people from a JSON file, and a
// sign-in form that checks their passwords. Started by tests/sso/servers.py as
//   node provider.mjs <config.json>
// config.json: {"port": 0, "issuer": "http://127.0.0.1:<port>", "client": {"client_id", "client_secret",
// "redirect_uris": [...]}, "accounts": "<accounts.json>"}. accounts.json is read at every sign-in and token, so a
// test changes a person's groups (or removes them) by rewriting it:
//   {"alice": {"password": "...", "claims": {"email": ..., "groups": [...]}}}
// Time: DOCKET_TEST_NOW (the test's pinned instant) shifts this process's clock, so the tokens' iat and exp agree
// with the Docket under test.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const testNow = process.env.DOCKET_TEST_NOW;
const RealDate = Date;
let offset = 0;
if (testNow) {
  offset = Date.parse(testNow) - Date.now();
  class ShiftedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(RealDate.now() + offset); else super(...args);
    }
    static now() { return RealDate.now() + offset; }
  }
  globalThis.Date = ShiftedDate;
}

const { default: Provider } = await import('oidc-provider');
const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const accounts = () => JSON.parse(readFileSync(config.accounts, 'utf8'));

const provider = new Provider(config.issuer, {
  clients: [{
    ...config.client,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name', 'preferred_username', 'manager'],
    groups: ['groups'],
  },
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  cookies: { keys: ['docket-tests-only-cookie-key'] },
  ttl: { Session: 3600, Interaction: 600, Grant: 3600 },
  async findAccount(ctx, id) {
    const person = accounts()[id];
    if (!person || person.disabled) {
      // Removed or disabled: the provider's session no longer vouches for them, as a real provider's would not
      // (a prompt=none check is answered login_required). oidc-provider 9 fails on a session whose account is
      // gone, so the session forgets the account here.
      if (ctx?.oidc?.session?.accountId === id) delete ctx.oidc.session.accountId;
      return undefined;
    }
    return {
      accountId: id,
      async claims() { return { sub: id, preferred_username: id, ...person.claims }; },
    };
  },
});
provider.proxy = false;
provider.on('server_error', (ctx, error) => console.error('server_error', error));

const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (uid, error) => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test provider</title></head>
<body><h1>Test provider: sign in</h1>${error ? `<p role="alert">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}/login">
<label>Provider username <input name="login" autocomplete="off"></label>
<label>Provider password <input name="password" type="password"></label>
<button type="submit">Continue</button></form>
<form method="post" action="/interaction/${escape(uid)}/abort"><button type="submit">Cancel</button></form>
</body></html>`;

const readBody = (req) => new Promise((resolve, reject) => {
  let data = '';
  req.on('data', (chunk) => { data += chunk; });
  req.on('end', () => resolve(new URLSearchParams(data)));
  req.on('error', reject);
});

async function interaction(req, res) {
  const [, , uid, action] = new URL(req.url, config.issuer).pathname.split('/');
  const details = await provider.interactionDetails(req, res);
  if (req.method === 'GET' && details.prompt.name === 'login') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    return res.end(page(uid));
  }
  if (req.method === 'GET' && details.prompt.name === 'consent') {
    // The test client is first-party: consent is given at once, for what was asked.
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
    if (details.prompt.details.missingOIDCScope) grant.addOIDCScope(details.prompt.details.missingOIDCScope.join(' '));
    if (details.prompt.details.missingOIDCClaims) grant.addOIDCClaims(details.prompt.details.missingOIDCClaims);
    const grantId = await grant.save();
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }
  if (req.method === 'POST' && action === 'login') {
    const form = await readBody(req);
    const login = form.get('login') || '';
    const person = accounts()[login];
    if (!person || person.disabled || person.password !== form.get('password')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(page(uid, 'Wrong username or password.'));
    }
    return provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
  }
  if (req.method === 'POST' && action === 'abort') {
    return provider.interactionFinished(req, res, {
      error: 'access_denied', error_description: 'The person cancelled the sign-in',
    }, { mergeWithLastSubmission: false });
  }
  res.writeHead(400, { 'content-type': 'text/plain' });
  return res.end('unexpected interaction step');
}

// The browser keeps the machine's clock, not the test's: a cookie's expiry, written on the shifted clock, is moved
// onto the machine's, so a cookie meant to last ten minutes does, whatever the day (one set to expire in the
// past, to delete it, stays in the past).
const onMachineClock = (cookie) => cookie.replace(/expires=([^;]+)/i, (_, when) => {
  const at = RealDate.parse(when);
  return Number.isNaN(at) ? `expires=${when}` : `expires=${new RealDate(at - offset).toUTCString()}`;
});
const withMachineExpiry = (res) => {
  // Every response's headers leave through writeHead (Node calls it for implicit headers too), once: the cookies
  // are moved there, whichever way they were set.
  const writeHead = res.writeHead.bind(res);
  res.writeHead = (...args) => {
    const cookies = res.getHeader('set-cookie');
    if (cookies) res.setHeader('set-cookie', [].concat(cookies).map(onMachineClock));
    return writeHead(...args);
  };
  return res;
};

const callback = provider.callback();
const server = createServer((req, plainRes) => {
  const res = offset ? withMachineExpiry(plainRes) : plainRes;
  if (req.url.startsWith('/interaction/')) {
    interaction(req, res).catch((error) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
    return;
  }
  callback(req, res);
});
server.listen(config.port, '127.0.0.1', () => {
  console.log(`provider listening on ${config.issuer}`);
});
