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
    document.body.dataset.guide = "logged-in";
    status("");
    if (!state.timer) {
      state.lastActivity = Date.now();
      state.timer = setInterval(tick, s.pingInterval * 1000);
    }
  }

  async function fetchSession() {
    const r = await fetch("session", { credentials: "same-origin", cache: "no-store" });
    if (r.ok) { showLoggedIn(await r.json()); return true; }
    return false;
  }

  async function logout(msg) {
    const s = state.session;
    showLoggedOut(msg);
    if (s) {
      await fetch("session", { method: "DELETE", credentials: "same-origin", headers: { "X-CSRF-Token": s.csrfToken } });
    }
  }

  // tick runs every pingInterval seconds while logged in: it logs out once
  // the user has been idle for the server's idle limit, else tells the
  // server whether the user was active and renews the JWT before it lapses.
  async function tick() {
    const s = state.session;
    if (!s) { return; }
    if (Date.now() - state.lastActivity >= s.idleTimeout * 1000) {
      await logout("Logged out after " + s.idleTimeout + " seconds without activity.");
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
    let msg = "Login failed (" + r.status + ").";
    try { msg = (await r.json()).message || msg; } catch (_) { /* not JSON */ }
    showLoggedOut(msg);
  });
  $("guide-sso-button").addEventListener("click", () => {
    const code = $("guide-tenant").value.trim();
    if (!code) { status("Enter the tenant code for single sign-on."); return; }
    window.location.href = "sso/" + encodeURIComponent(code) + "/start";
  });
  $("guide-logout").addEventListener("click", () => logout("Logged out."));

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
  fetchSession().then((ok) => {
    if (!ok) { showLoggedOut(params.get("error") || ""); }
  });
})();
