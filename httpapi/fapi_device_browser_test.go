package httpapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/latchkey/latchkey/latchkeytest"
)

// The device grant end to end: golang.org/x/oauth2's DeviceAuth and
// DeviceAccessToken (which polls at the interval and honours slow_down)
// play the device, while a user in headless Chromium enters the code on
// the hosted user-code page, signs in with a password or a passkey
// (Chrome's virtual authenticator), and allows or denies.

type deviceResult struct {
	tok *oauth2.Token
	err error
}

// startDevice asks for a device code and starts polling; the result
// arrives on the channel.
func startDevice(t *testing.T, conf *oauth2.Config, ctx context.Context) (*oauth2.DeviceAuthResponse, <-chan deviceResult) {
	t.Helper()
	da, err := conf.DeviceAuth(ctx)
	if err != nil {
		t.Fatalf("DeviceAuth: %v", err)
	}
	out := make(chan deviceResult, 1)
	go func() {
		tok, err := conf.DeviceAccessToken(ctx, da)
		out <- deviceResult{tok, err}
	}()
	return da, out
}

func TestDeviceGrantInBrowser(t *testing.T) {
	b := newPasskeyBrowser(t)
	b.registerInGuide()
	s := b.oidcServer()
	cl := s.api("POST", "/api/v1/admin/tenants/"+b.root.ID+"/oauth-clients", map[string]any{"name": "Kitchen TV", "type": "public",
		"scopes": []string{"openid", "profile"}, "grant_types": []string{"urn:ietf:params:oauth:grant-type:device_code"}})
	conf := &oauth2.Config{ClientID: cl["client_id"].(string), Scopes: []string{"openid", "profile"},
		Endpoint: oauth2.Endpoint{DeviceAuthURL: b.url + "/oauth/v1/device_authorization", TokenURL: b.url + "/oauth/v1/token", AuthStyle: oauth2.AuthStyleInParams}}
	ctx := context.WithValue(b.ctx, oauth2.HTTPClient, s.http)
	amrOf := func(r deviceResult) []any {
		t.Helper()
		if r.err != nil {
			t.Fatalf("DeviceAccessToken: %v", r.err)
		}
		id, _ := r.tok.Extra("id_token").(string)
		if id == "" {
			t.Fatalf("no ID token: %+v", r.tok)
		}
		claims := latchkeytest.UnverifiedClaims(t, id)
		if claims["aud"].([]any)[0] != conf.ClientID || claims["preferred_username"] != "admin" {
			t.Errorf("ID token %v", claims)
		}
		amr, _ := claims["amr"].([]any)
		return amr
	}
	confirm := func(decision, want string) {
		t.Helper()
		b.run("the confirmation", chromedp.WaitVisible(`#allow`))
		if msg := b.textNow(`#message`); msg != "Kitchen TV wants to sign in as admin with openid, profile. Only continue if you started this on your own device." {
			t.Errorf("confirmation %q", msg)
		}
		b.run(decision, chromedp.Click(`#`+decision), chromedp.WaitVisible(`body[data-device="done"]`))
		if msg := b.textNow(`#message`); msg != want {
			t.Errorf("after %s: %q, want %q", decision, msg, want)
		}
	}

	t.Run("password, allow", func(t *testing.T) {
		da, res := startDevice(t, conf, ctx)
		b.run("open verification_uri_complete", chromedp.Navigate(da.VerificationURIComplete), chromedp.WaitVisible(`#user_code`))
		// Pre-filled, never submitted for the user.
		if v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.getElementById("user_code").value + "|" + document.body.dataset.device + "|" +
			document.querySelector("label").textContent + "|" + document.querySelector("h1").textContent + "|" + document.getElementById("continue").textContent`)); err != nil ||
			v != da.UserCode+"|enter|Code|Enter the code shown on your device|Continue" {
			t.Errorf("the page: %q %v", v, err)
		}
		b.run("continue to the sign-in", chromedp.Click(`#continue`), chromedp.WaitVisible(`#username`))
		b.run("sign in with the password", chromedp.SendKeys(`#username`, "admin"), chromedp.SendKeys(`#password`, "admin-password-1"), chromedp.Click(`#sign-in`))
		confirm("allow", "Device connected.")
		if amr := amrOf(<-res); len(amr) != 1 || amr[0] != "pwd" {
			t.Errorf("amr %v", amr)
		}
	})

	t.Run("signed in, typed code, deny", func(t *testing.T) {
		da, res := startDevice(t, conf, ctx)
		// Typed in lower case without the dash; the session of the
		// tenant skips the sign-in, never the confirmation.
		typed := strings.ToLower(strings.ReplaceAll(da.UserCode, "-", ""))
		b.run("type the code", chromedp.Navigate(da.VerificationURI), chromedp.WaitVisible(`#user_code`), chromedp.SendKeys(`#user_code`, typed), chromedp.Click(`#continue`))
		confirm("deny", "The device was not connected.")
		r := <-res
		var re *oauth2.RetrieveError
		if !errors.As(r.err, &re) || re.ErrorCode != "access_denied" {
			t.Errorf("denied: %+v %v", r.tok, r.err)
		}
	})

	t.Run("passkey, allow", func(t *testing.T) {
		b.run("forget the session", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, network.ClearBrowserCookies, cdp.Empty{})
			return err
		}))
		da, res := startDevice(t, conf, ctx)
		b.run("open verification_uri_complete", chromedp.Navigate(da.VerificationURIComplete), chromedp.WaitVisible(`#continue`),
			chromedp.Click(`#continue`), chromedp.WaitVisible(`#passkey`))
		b.run("sign in with a passkey", chromedp.Click(`#passkey`))
		confirm("allow", "Device connected.")
		if amr := amrOf(<-res); len(amr) == 0 || amr[0] != "hwk" {
			t.Errorf("amr %v, want hwk first", amr)
		}
	})
}
