// The device grant and token exchange with oauth4webapi (not Latchkey's
// code). A TV (a public client) asks for a device code
// (deviceAuthorizationRequest / processDeviceAuthorizationResponse) and
// polls (deviceCodeGrantRequest / processDeviceCodeResponse) with a DPoP
// key: authorization_pending, then, once the Go test has confirmed the code
// on the user-code page as the user and moved the server's clock past the
// interval, the tokens. A service (private_key_jwt) then exchanges the TV's
// access token (genericTokenEndpointRequest with the RFC 8693 grant /
// processGenericTokenEndpointResponse) for a narrower audience and scope,
// and a resource server checks both tokens with validateJwtAccessToken
// (RFC 9068, requireDPoP). One JSON line per step on standard output; the
// Go test answers on standard input.
import * as oauth from 'oauth4webapi'
import { createInterface } from 'node:readline'

const insecure = { [oauth.allowInsecureRequests]: true }
const say = (v) => console.log(JSON.stringify(v))
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
const read = async () => JSON.parse((await lines.next()).value)
const issuer = new URL(process.env.ISSUER)
const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }))

// A resource server: oauth4webapi's RFC 9068 validation of the request a
// client would send (protectedResourceRequest, its DPoP proof included),
// the request caught by customFetch instead of being sent.
const resourceServer = async (accessToken, DPoP, resource) => {
  let out
  await oauth.protectedResourceRequest(accessToken, 'GET', new URL(resource + '/v1/things'), undefined, undefined, {
    DPoP, ...insecure,
    [oauth.customFetch]: async (url, init) => {
      try {
        const claims = await oauth.validateJwtAccessToken(as, new Request(url, init), resource, { requireDPoP: true, ...insecure })
        out = { ok: true, claims }
      } catch (err) {
        out = { ok: false, error: err.code ?? err.name, message: err.message }
      }
      return new Response(null, { status: 204 })
    },
  })
  return out
}

// The device grant.
const tv = { client_id: process.env.DEVICE_CLIENT_ID, id_token_signed_response_alg: 'ES256' }
const tvDPoP = oauth.DPoP(tv, await oauth.generateKeyPair('ES256'))
const da = await oauth.processDeviceAuthorizationResponse(as, tv,
  await oauth.deviceAuthorizationRequest(as, tv, oauth.None(), { scope: 'openid profile event:event:consumer event:event:producer' }, insecure))
const poll = async () => oauth.processDeviceCodeResponse(as, tv,
  await oauth.deviceCodeGrantRequest(as, tv, oauth.None(), da.device_code, { DPoP: tvDPoP, ...insecure }))
let first
try {
  await poll()
  first = 'tokens'
} catch (err) {
  if (!(err instanceof oauth.ResponseBodyError)) throw err
  first = err.error
}
say({ user_code: da.user_code, verification_uri: da.verification_uri, verification_uri_complete: da.verification_uri_complete,
  expires_in: da.expires_in, interval: da.interval, first_poll: first })

await read() // the user allowed on the page; the server's clock passed the interval
const tokens = await poll()
const idClaims = oauth.getValidatedIdTokenClaims(tokens)
const deviceAccess = await resourceServer(tokens.access_token, tvDPoP, issuer.href.replace(/\/$/, ''))
say({ token_type: tokens.token_type, scope: tokens.scope, id_sub: idClaims?.sub, id_azp: idClaims?.azp, access: deviceAccess })

// Token exchange: the service acts for the user at the billing API.
const svc = { client_id: process.env.SERVICE_CLIENT_ID }
const key = await crypto.subtle.importKey('jwk', JSON.parse(process.env.SERVICE_JWK), { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])
const svcAuth = oauth.PrivateKeyJwt({ key, kid: 'k1' })
const svcDPoP = oauth.DPoP(svc, await oauth.generateKeyPair('ES256'))
const exchange = async (params) => oauth.processGenericTokenEndpointResponse(as, svc,
  await oauth.genericTokenEndpointRequest(as, svc, svcAuth, 'urn:ietf:params:oauth:grant-type:token-exchange', {
    subject_token: tokens.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token', ...params,
  }, { DPoP: svcDPoP, ...insecure }))
const billing = process.env.RESOURCE
const exchanged = await exchange({ resource: billing, scope: 'event:event:consumer' })
const atBilling = await resourceServer(exchanged.access_token, svcDPoP, billing)
const atIssuer = await resourceServer(exchanged.access_token, svcDPoP, issuer.href.replace(/\/$/, ''))
let widened
try {
  await exchange({ resource: billing, scope: 'event:event:consumer event:event:producer' })
  widened = 'granted'
} catch (err) {
  if (!(err instanceof oauth.ResponseBodyError)) throw err
  widened = err.error
}
say({ token_type: exchanged.token_type, issued_token_type: exchanged.issued_token_type, scope: exchanged.scope,
  expires_in: exchanged.expires_in, refresh_token: exchanged.refresh_token ?? null, at_billing: atBilling, at_issuer: atIssuer, widened })
process.exit(0)
