package identity

import (
	"fmt"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestTokenCacheIsBounded checks that a stream of distinct tokens never
// grows the verified-token cache past tokenCacheSize, and that a cached
// token is found again until it expires.
func TestTokenCacheIsBounded(t *testing.T) {
	var tc tokenCache
	tc.init()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	claims := &Claims{RegisteredClaims: jwt.RegisteredClaims{
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute)),
	}}
	for i := range tokenCacheSize + 10 {
		tc.put(fmt.Sprintf("token-%d", i), "JWT", claims, now)
		if len(tc.m) > tokenCacheSize {
			t.Fatalf("after %d puts the cache holds %d entries, more than %d", i+1, len(tc.m), tokenCacheSize)
		}
	}
	tc.put("kept", "JWT", claims, now)
	if _, ok := tc.get("kept", "JWT", now); !ok {
		t.Error("a cached token is not found")
	}
	if _, ok := tc.get("kept", "at+jwt", now); ok {
		t.Error("a token cached for one kind is found for another")
	}
	if _, ok := tc.get("kept", "JWT", now.Add(time.Minute)); ok {
		t.Error("an expired token is still found")
	}
}
