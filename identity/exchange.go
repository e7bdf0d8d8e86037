package identity

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/latchkey/latchkey/audit"
	"github.com/latchkey/latchkey/fault"
)

// Token exchange (RFC 8693), delegation only: a confidential client
// exchanges a token of a user (the subject) for an access token that
// keeps the subject and names the client, or an actor token's holder, in
// act; audience and scope can only narrow; no refresh token. Revoking a
// token revokes what was exchanged from it (token_exchange_links).

// GrantTokenExchange is RFC 8693's grant type.
const GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"

// Token types of RFC 8693 §3.
const (
	TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeIDToken     = "urn:ietf:params:oauth:token-type:id_token"
)

// ActionTokenExchange is the audit action of a token exchange.
const ActionTokenExchange = "oauth.token-exchange"

// maxActDepth bounds the nesting of act claims.
const maxActDepth = 8

// ExchangeRequest is a token exchange request (RFC 8693 §2.1).
type ExchangeRequest struct {
	Auth                           ClientAuth
	SubjectToken, SubjectTokenType string
	ActorToken, ActorTokenType     string
	RequestedTokenType             string
	Resources                      []string // resource and audience alike
	Scope                          string
	DPoP                           *DPoPRequest
}

// ExchangeGrant is the answer of a token exchange (RFC 8693 §2.2.1).
type ExchangeGrant struct {
	AccessToken     string `json:"access_token"`
	IssuedTokenType string `json:"issued_token_type"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	Scope           string `json:"scope"`
}

func badExchange(msg string) error {
	return fault.E(fault.Invalid, msg, ErrInvalidRequest)
}

// exchangeSubject is what a subject token says.
type exchangeSubject struct {
	sub    string
	jti    string // an access token's, to link the exchanged token to
	scopes []string
	exp    time.Time
	act    json.RawMessage
	// scopesNamed: the subject (an ID token) names no scopes; the
	// request must.
	scopesNamed bool
}

// ExchangeToken answers a token exchange request: the client must be
// confidential with the token-exchange grant (else unauthorized_client);
// the subject an unrevoked access token of its tenant issued to it or for
// one of its token_exchange_subject_audiences, or an ID token issued to
// it; the actor, if any, an access token of the tenant issued to it.
// Malformed, unsupported, invalid or foreign tokens are invalid_request
// (RFC 8693 §2.2.2), an audience not the issuer nor registered
// invalid_target, a scope outside the subject's and the client's
// invalid_scope. The token lives min(AccessTokenTTL, the subject's
// remaining life) and is bound as any grant's. Audited as
// oauth.token-exchange.
func (s *Service) ExchangeToken(ctx context.Context, req ExchangeRequest) (ExchangeGrant, error) {
	c, err := s.AuthenticateClientRequest(ctx, req.Auth, ActionTokenExchange)
	if err != nil {
		return ExchangeGrant{}, err
	}
	ctx = audit.WithActor(ctx, c.ID, c.ID)
	meta := map[string]any{"client_id": c.ID}
	fail := func(err error) (ExchangeGrant, error) {
		return ExchangeGrant{}, s.record(ctx, c.TenantID, ActionTokenExchange, err, meta)
	}
	if c.IsPublic() || !c.AllowsGrant(GrantTokenExchange) {
		return fail(fault.E(fault.Invalid, "the client is not registered for token exchange", ErrUnauthorizedClient))
	}
	if req.RequestedTokenType != "" && req.RequestedTokenType != TokenTypeAccessToken {
		return fail(badExchange("requested_token_type must be " + TokenTypeAccessToken))
	}
	if req.SubjectToken == "" || req.SubjectTokenType == "" {
		return fail(badExchange("subject_token and subject_token_type are required"))
	}
	now := s.cfg.Clock.Now()
	subj, err := s.exchangeSubject(ctx, c, req.SubjectToken, req.SubjectTokenType, now)
	if err != nil {
		return fail(err)
	}
	meta["subject"] = subj.sub
	if subj.jti != "" {
		meta["parent_jti"] = subj.jti
	}
	act := map[string]any{"sub": c.ID}
	if req.ActorToken != "" || req.ActorTokenType != "" {
		if req.ActorTokenType != TokenTypeAccessToken || req.ActorToken == "" {
			return fail(badExchange("actor_token must be an access token (actor_token_type " + TokenTypeAccessToken + ")"))
		}
		at, err := s.cfg.Keys.Verify(req.ActorToken, AccessToken)
		if err != nil || at.TenantID != c.TenantID || at.ClientID != c.ID || s.checkRevoked(ctx, at) != nil {
			return fail(badExchange("the actor_token is not a valid access token issued to this client"))
		}
		act = map[string]any{"sub": at.Subject, "client_id": at.ClientID}
	}
	meta["actor"] = act["sub"]
	if len(subj.act) > 0 {
		if depth(subj.act) >= maxActDepth {
			return fail(badExchange("the subject token was exchanged too many times"))
		}
		act["act"] = subj.act // RFC 8693 §4.1: the prior actor nests
	}
	actJSON, _ := json.Marshal(act)
	aud, err := s.audience(c, req.Resources)
	if err != nil {
		return fail(err)
	}
	meta["audience"] = []string(aud)
	allowed := []string{}
	for _, sc := range subj.scopes {
		if slices.Contains(c.Scopes, sc) && sc != ScopeOpenID && sc != ScopeOfflineAccess {
			allowed = append(allowed, sc)
		}
	}
	scopes := allowed
	if subj.scopesNamed && req.Scope == "" {
		return fail(fault.E(fault.Invalid, fault.Field("scope"), "an ID token names no scopes: the request must", ErrInvalidScope))
	}
	if req.Scope != "" {
		scopes = strings.Fields(req.Scope)
		for _, sc := range scopes {
			if !slices.Contains(allowed, sc) {
				return fail(fault.E(fault.Invalid, fault.Field("scope"), fmt.Sprintf("scope %q is not both the subject's and the client's", sc), ErrInvalidScope))
			}
		}
	}
	if len(scopes) == 0 {
		return fail(fault.E(fault.Invalid, fault.Field("scope"), "no scope of the subject token is the client's", ErrInvalidScope))
	}
	granted := strings.Join(slices.Compact(slices.Sorted(slices.Values(scopes))), " ")
	meta["scope"] = granted
	cnf, tokenType, err := s.SenderConstraint(ctx, c, Binding{DPoP: req.DPoP, Certificates: req.Auth.Certificates})
	if err != nil {
		if fault.Is(fault.Invalid, err) {
			return fail(err)
		}
		return ExchangeGrant{}, err
	}
	ttl := min(s.cfg.AccessTokenTTL, subj.exp.Sub(now.Truncate(time.Second)))
	if ttl < time.Second {
		return fail(badExchange("the subject token has expired"))
	}
	t, err := s.tenant(ctx, c.TenantID)
	if err != nil {
		return ExchangeGrant{}, err
	}
	rc := jwt.RegisteredClaims{Subject: subj.sub, Audience: aud, ID: rand.Text()}
	token, exp, err := s.cfg.Keys.Sign(ctx, Claims{Kind: AccessToken, TenantID: t.ID, TenantCode: t.Code, ClientID: c.ID, Scope: granted,
		Confirmation: cnf, Act: actJSON, RegisteredClaims: rc}, ttl)
	if err != nil {
		return ExchangeGrant{}, err
	}
	if subj.jti != "" {
		if err := s.links.write(ctx, TokenExchangeLink{ParentJTI: subj.jti, ChildJTI: rc.ID, TenantID: t.ID, ExpiresAt: exp.UTC()}, s.now()); err != nil {
			return ExchangeGrant{}, err
		}
	}
	meta["jti"] = rc.ID
	g := ExchangeGrant{AccessToken: token, IssuedTokenType: TokenTypeAccessToken, TokenType: tokenType, ExpiresIn: int64(ttl / time.Second), Scope: granted}
	return g, s.record(ctx, t.ID, ActionTokenExchange, nil, meta)
}

// exchangeSubject reads and checks a subject token for client c.
func (s *Service) exchangeSubject(ctx context.Context, c OAuthClient, token, typ string, now time.Time) (exchangeSubject, error) {
	switch typ {
	case TokenTypeAccessToken:
		tc, err := s.cfg.Keys.Verify(token, AccessToken)
		if err != nil || tc.TenantID != c.TenantID {
			return exchangeSubject{}, badExchange("the subject_token is not a valid access token of this tenant")
		}
		if err := s.checkRevoked(ctx, tc); err != nil {
			if fault.Is(fault.Unauthenticated, err) {
				return exchangeSubject{}, badExchange("the subject_token is revoked")
			}
			return exchangeSubject{}, err
		}
		mine := tc.ClientID == c.ID
		for _, a := range tc.Audience {
			mine = mine || slices.Contains(c.TokenExchangeSubjectAudiences, a)
		}
		if !mine {
			return exchangeSubject{}, badExchange("the subject_token is not exchangeable by this client")
		}
		return exchangeSubject{sub: tc.Subject, jti: tc.ID, scopes: strings.Fields(tc.Scope), exp: tc.ExpiresAt.Time, act: tc.Act}, nil
	case TokenTypeIDToken:
		var idc struct {
			Issuer   string          `json:"iss"`
			Subject  string          `json:"sub"`
			Audience json.RawMessage `json:"aud"`
			Expiry   int64           `json:"exp"`
		}
		if err := s.cfg.Keys.ParseIDToken(token, &idc); err != nil || idc.Issuer != s.cfg.Keys.Issuer() || idc.Subject == "" ||
			!audienceIs(idc.Audience, c.ID) || !time.Unix(idc.Expiry, 0).After(now) {
			return exchangeSubject{}, badExchange("the subject_token is not a valid ID token issued to this client")
		}
		// An ID token names no scopes: the request names them.
		return exchangeSubject{sub: idc.Subject, scopes: c.Scopes, exp: time.Unix(idc.Expiry, 0), scopesNamed: true}, nil
	}
	return exchangeSubject{}, badExchange("subject_token_type must be " + TokenTypeAccessToken + " or " + TokenTypeIDToken)
}

// audienceIs reports whether an aud claim (a string or an array) is
// exactly id or holds it alone.
func audienceIs(raw json.RawMessage, id string) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == id
	}
	var list []string
	return json.Unmarshal(raw, &list) == nil && len(list) == 1 && list[0] == id
}

// depth is the nesting depth of an act claim.
func depth(act json.RawMessage) int {
	n := 0
	for len(act) > 0 && n < maxActDepth+1 {
		var a struct {
			Act json.RawMessage `json:"act"`
		}
		if json.Unmarshal(act, &a) != nil {
			break
		}
		n++
		act = a.Act
	}
	return n
}

// revokeExchanged revokes, recursively, the tokens exchanged from the
// token jti of tenantID.
func (s *Service) revokeExchanged(ctx context.Context, tenantID, jti string, seen map[string]bool) error {
	if seen[jti] || len(seen) > 10_000 {
		return nil
	}
	seen[jti] = true
	links, err := s.st.ListTokenExchangeChildren(ctx, jti)
	if err != nil {
		return err
	}
	now := s.now()
	for _, l := range links {
		if l.TenantID != tenantID || !l.ExpiresAt.After(now) {
			continue
		}
		r := RevokedToken{JTI: l.ChildJTI, TenantID: tenantID, ExpiresAt: l.ExpiresAt, RevokedAt: now}
		if err := s.st.RevokeToken(ctx, r); err != nil {
			return err
		}
		s.revs.noteToken(r)
		if err := s.revokeExchanged(ctx, tenantID, l.ChildJTI, seen); err != nil {
			return err
		}
	}
	return nil
}
