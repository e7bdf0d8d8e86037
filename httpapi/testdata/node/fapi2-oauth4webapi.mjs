// A FAPI 2.0 client built on oauth4webapi (not Latchkey's code): discovery,
// private_key_jwt, a signed request object pushed with PAR, a DPoP-bound
// code exchange, the authorization response's iss checked, and a DPoP
// protected call. The Go test plays the browser: this script prints the
// request_uri and reads the callback URL from its standard input.
import * as oauth from 'oauth4webapi'
import { createInterface } from 'node:readline'

const insecure = { [oauth.allowInsecureRequests]: true }
const issuer = new URL(process.env.ISSUER)
const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }))
const client = { client_id: process.env.CLIENT_ID, id_token_signed_response_alg: 'ES256' }
const key = await crypto.subtle.importKey('jwk', JSON.parse(process.env.CLIENT_JWK), { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])
const privateKey = { key, kid: 'k1' }
const clientAuth = oauth.PrivateKeyJwt(privateKey)
const DPoP = oauth.DPoP(client, await oauth.generateKeyPair('ES256'))
const redirect_uri = 'https://bank.example/cb'
const code_verifier = oauth.generateRandomCodeVerifier()
const code_challenge = await oauth.calculatePKCECodeChallenge(code_verifier)
const state = oauth.generateRandomState()

const request = await oauth.issueRequestObject(as, client, {
  response_type: 'code', redirect_uri, scope: 'openid', code_challenge, code_challenge_method: 'S256', state,
}, privateKey)
const par = await oauth.processPushedAuthorizationResponse(as, client,
  await oauth.pushedAuthorizationRequest(as, client, clientAuth, { request }, { DPoP, ...insecure }))
console.log(JSON.stringify({ request_uri: par.request_uri }))

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
const callback = new URL((await lines.next()).value)
const params = oauth.validateAuthResponse(as, client, callback, state)
const tokens = await oauth.processAuthorizationCodeResponse(as, client,
  await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, redirect_uri, code_verifier, { DPoP, ...insecure }))
const info = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(as.userinfo_endpoint), undefined, undefined, { DPoP, ...insecure })
console.log(JSON.stringify({ token_type: tokens.token_type, userinfo: info.status, sub: (await info.json()).sub }))
process.exit(0)
