// The interactive API guide's page logic: login and logout, the session's
// short-lived platform JWT added to "try it out" calls, activity pings and
// the idle logout. Served from /guide/static/guide.js (no inline script, so
// the page's Content-Security-Policy allows scripts from the server only).
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const state = { session: null, tokenAt: 0, active: false, lastActivity: Date.now(), timer: null };

  function status(msg) { $("guide-status").textContent = msg || ""; }

  function showLoggedOut(msg) {
    state.session = null;
    if (state.timer) { clearInterval(state.timer); state.timer = null; }
    $("guide-login").hidden = false;
    $("guide-user").hidden = true;
    $("guide-logout").hidden = true;
    $("guide-add-passkey").hidden = true;
    document.body.dataset.guide = "logged-out";
    status(msg);
  }

  function showLoggedIn(s) {
    state.session = s;
    state.tokenAt = Date.now();
    $("guide-login").hidden = true;
    $("guide-user").hidden = false;
    $("guide-user").textContent = "Logged in as " + s.user.name + " (tenant " + s.tenant.code + ")";
    $("guide-logout").hidden = false;
    $("guide-add-passkey").hidden = false;
    document.body.dataset.guide = "logged-in";
    status("");
    if (!state.timer) {
      // Opening or reloading the guide is activity.
      state.active = true;
      state.lastActivity = Date.now();
      state.timer = setInterval(tick, s.pingInterval * 1000);
    }
  }

  async function fetchSession() {
    const r = await fetch("session", { credentials: "same-origin", cache: "no-store" });
    if (r.ok) { showLoggedIn(await r.json()); return true; }
    return false;
  }

  async function logout(msg, reason) {
    const s = state.session;
    showLoggedOut(msg);
    if (s) {
      await fetch(reason ? "session?reason=" + reason : "session", { method: "DELETE", credentials: "same-origin", headers: { "X-CSRF-Token": s.csrfToken } });
    }
  }

  // tick runs every pingInterval seconds while logged in: it logs out once
  // the user has been idle for the server's idle limit, else tells the
  // server whether the user was active and renews the JWT before it lapses.
  async function tick() {
    const s = state.session;
    if (!s) { return; }
    if (Date.now() - state.lastActivity >= s.idleTimeout * 1000) {
      await logout("Logged out after " + s.idleTimeout + " seconds without activity.", "idle");
      return;
    }
    const active = state.active;
    state.active = false;
    const r = await fetch("session/activity", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": s.csrfToken },
      body: JSON.stringify({ active: active }),
    });
    if (r.status === 401) { showLoggedOut("The session has ended; log in again."); return; }
    if (Date.now() - state.tokenAt > (s.tokenExpiresIn / 2) * 1000) {
      if (!(await fetchSession())) { showLoggedOut("The session has ended; log in again."); }
    }
  }

  for (const ev of ["mousedown", "mousemove", "keydown", "wheel", "touchstart", "scroll"]) {
    window.addEventListener(ev, () => { state.active = true; state.lastActivity = Date.now(); }, { passive: true, capture: true });
  }

  $("guide-login").addEventListener("submit", async (e) => {
    e.preventDefault();
    status("Logging in…");
    const r = await fetch("session", {
      method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: $("guide-name").value, password: $("guide-password").value, tenant: $("guide-tenant").value }),
    });
    $("guide-password").value = "";
    if (r.ok) { showLoggedIn(await r.json()); return; }
    let msg = "Login failed (" + r.status + ").", body = {};
    try { body = await r.json(); msg = body.message || msg; } catch (_) { /* not JSON */ }
    if (r.status === 403 && body.mfa_token && body.codeDesc === "MFA_REQUIRED") {
      // The password was right: the login's second step (API-mfa.md).
      state.mfaToken = body.mfa_token;
      $("guide-login").hidden = true;
      $("guide-mfa").hidden = false;
      $("guide-otp").focus();
      status("Two-step verification: enter the code from your authenticator app, or a recovery code.");
      return;
    }
    showLoggedOut(msg);
  });
  $("guide-mfa").addEventListener("submit", async (e) => {
    e.preventDefault();
    const code = $("guide-otp").value.trim();
    const grant = /^[0-9]{6}$/.test(code) ? { grant_type: "mfa_otp", otp: code } : { grant_type: "mfa_recovery_code", recovery_code: code };
    const r = await fetch("session", {
      method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(Object.assign({ mfa_token: state.mfaToken }, grant)),
    });
    $("guide-otp").value = "";
    if (r.ok) { $("guide-mfa").hidden = true; state.mfaToken = ""; showLoggedIn(await r.json()); return; }
    let msg = "Verification failed (" + r.status + ").";
    try { msg = (await r.json()).message || msg; } catch (_) { /* not JSON */ }
    if (r.status === 401 && msg !== "Invalid code.") { $("guide-mfa").hidden = true; state.mfaToken = ""; showLoggedOut(msg); return; }
    status(msg);
  });
  $("guide-sso-button").addEventListener("click", () => {
    const code = $("guide-tenant").value.trim();
    if (!code) { status("Enter the tenant code for single sign-on."); return; }
    window.location.href = "sso/" + encodeURIComponent(code) + "/start";
  });
  $("guide-logout").addEventListener("click", () => logout("Logged out."));

  // Passkeys (WebAuthn). The server speaks the WebAuthn Level 3 JSON forms;
  // these helpers convert them for browsers without
  // PublicKeyCredential.parseCreationOptionsFromJSON and toJSON().
  const b64u = {
    decode: (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4)), (c) => c.charCodeAt(0)).buffer,
    encode: (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""),
  };
  const descriptors = (list) => (list || []).map((d) => Object.assign({}, d, { id: b64u.decode(d.id) }));
  function creationOptions(o) {
    if (window.PublicKeyCredential && PublicKeyCredential.parseCreationOptionsFromJSON) { return PublicKeyCredential.parseCreationOptionsFromJSON(o); }
    return Object.assign({}, o, { challenge: b64u.decode(o.challenge), user: Object.assign({}, o.user, { id: b64u.decode(o.user.id) }), excludeCredentials: descriptors(o.excludeCredentials) });
  }
  function requestOptions(o) {
    if (window.PublicKeyCredential && PublicKeyCredential.parseRequestOptionsFromJSON) { return PublicKeyCredential.parseRequestOptionsFromJSON(o); }
    return Object.assign({}, o, { challenge: b64u.decode(o.challenge), allowCredentials: descriptors(o.allowCredentials) });
  }
  function credentialJSON(c) {
    if (typeof c.toJSON === "function") { return c.toJSON(); }
    const r = c.response, out = { id: c.id, rawId: b64u.encode(c.rawId), type: c.type, authenticatorAttachment: c.authenticatorAttachment || null, clientExtensionResults: c.getClientExtensionResults(), response: { clientDataJSON: b64u.encode(r.clientDataJSON) } };
    if (r.attestationObject) { out.response.attestationObject = b64u.encode(r.attestationObject); }
    if (r.authenticatorData) { out.response.authenticatorData = b64u.encode(r.authenticatorData); }
    if (r.signature) { out.response.signature = b64u.encode(r.signature); }
    if (r.userHandle) { out.response.userHandle = b64u.encode(r.userHandle); }
    return out;
  }
  async function failure(r, what) {
    let msg = what + " failed (" + r.status + ").";
    try { msg = (await r.json()).message || msg; } catch (_) { /* not JSON */ }
    return msg;
  }

  // Sign in with a passkey: the tenant code names the relying party's
  // tenant; the user name is optional (without it the browser offers the
  // tenant's discoverable credentials on this device).
  $("guide-passkey-button").addEventListener("click", async () => {
    try {
      status("Waiting for the passkey…");
      const body = { auth_domain: $("guide-tenant").value.trim() };
      if ($("guide-name").value.trim()) { body.name = $("guide-name").value.trim(); }
      const o = await fetch("/api/v1/auth/passkeys/options", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      if (!o.ok) { showLoggedOut(await failure(o, "Passkey sign-in")); return; }
      const flow = await o.json();
      const cred = await navigator.credentials.get({ publicKey: requestOptions(flow.publicKey) });
      const r = await fetch("session", {
        method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ flowId: flow.flowId, credential: credentialJSON(cred) }),
      });
      if (r.ok) { showLoggedIn(await r.json()); return; }
      showLoggedOut(await failure(r, "Passkey sign-in"));
    } catch (e) {
      showLoggedOut("Passkey sign-in failed: " + e.message);
    }
  });

  // Add a passkey of this device for the logged-in user.
  $("guide-add-passkey").addEventListener("click", async () => {
    const s = state.session;
    if (!s) { return; }
    try {
      status("Creating a passkey…");
      const auth = { "Content-Type": "application/json", Authorization: "Bearer " + s.token };
      const o = await fetch("/api/v1/me/passkeys/options", { method: "POST", headers: auth, body: "{}" });
      if (!o.ok) { status(await failure(o, "Adding a passkey")); return; }
      const flow = await o.json();
      const cred = await navigator.credentials.create({ publicKey: creationOptions(flow.publicKey) });
      const r = await fetch("/api/v1/me/passkeys", {
        method: "POST", headers: auth,
        body: JSON.stringify({ flowId: flow.flowId, credential: credentialJSON(cred), friendlyName: "Added in the guide" }),
      });
      if (!r.ok) { status(await failure(r, "Adding a passkey")); return; }
      const a = await r.json();
      document.body.dataset.passkey = a.id;
      status("Passkey added.");
    } catch (e) {
      status("Adding a passkey failed: " + e.message);
    }
  });

  // The document is fetched here so that "try it out" calls go to this
  // page's own origin whatever the server's PublicURL says.
  fetch("/openapi.json", { cache: "no-store" }).then((r) => r.json()).then((spec) => {
    spec.servers = [{ url: window.location.origin, description: "This server" }];
    window.ui = SwaggerUIBundle({
      spec: spec,
      dom_id: "#swagger-ui",
      deepLinking: false,
      tryItOutEnabled: false,
      requestInterceptor: (req) => {
        // The session user's JWT goes on calls that carry no credential of
        // their own (the Authorize dialog's credentials win).
        const s = state.session;
        if (s && !req.headers.Authorization && !req.headers.authorization && !req.url.endsWith("/openapi.json")) {
          req.headers.Authorization = "Bearer " + s.token;
        }
        return req;
      },
    });
  });

  const params = new URLSearchParams(window.location.search);
  // The page's first look at the session may answer after a login made
  // meanwhile (a large document keeps the page busy): it must not log
  // that login out.
  fetchSession().then((ok) => {
    if (!ok && !state.session) { showLoggedOut(params.get("error") || ""); }
  });
})();
