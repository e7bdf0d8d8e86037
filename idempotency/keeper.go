package idempotency

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/latchkey/latchkey/clock"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/internal/gather"
)

// Outcome is what Begin found for a request's key.
type Outcome int

const (
	// Proceed: the key is reserved for this request; run it with the
	// claim in its context, then Complete or Release.
	Proceed Outcome = iota
	// Replay: the key's answer is kept; send it again.
	Replay
	// Mismatch: the key was used for a different request (422).
	Mismatch
	// InFlight: the first request with the key is still running (409).
	InFlight
	// Lost: the first request's write is stored but its answer was never
	// kept (its process died in between); it is not run again (409).
	Lost
)

// ParseKey reads an Idempotency-Key header value: 1 to MaxKeyLength
// printable ASCII characters (space to tilde). The draft's Structured
// Field form, a quoted string, is accepted too and unquoted ("\"" and "\\"
// escapes).
func ParseKey(v string) (string, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		var b strings.Builder
		in := v[1 : len(v)-1]
		for i := 0; i < len(in); i++ {
			c := in[i]
			switch {
			case c == '\\':
				if i+1 == len(in) || (in[i+1] != '"' && in[i+1] != '\\') {
					return "", fault.E(fault.Invalid, "Idempotency-Key has a bad escape")
				}
				i++
				b.WriteByte(in[i])
			case c == '"':
				return "", fault.E(fault.Invalid, "Idempotency-Key has an unescaped quote")
			default:
				b.WriteByte(c)
			}
		}
		v = b.String()
	}
	if v == "" || len(v) > MaxKeyLength {
		return "", fault.E(fault.Invalid, "Idempotency-Key must be 1 to 255 characters")
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", fault.E(fault.Invalid, "Idempotency-Key must be printable ASCII characters")
		}
	}
	return v, nil
}

// Keeper runs keys on a store: a request Begins, and Finishes with its
// answer; Run purges expired keys. Concurrent Begins share one store
// transaction, and so do concurrent Finishes. The zero value with Store
// and Clock set is ready; a Keeper must not be copied after first use.
type Keeper struct {
	Store  Store
	Clock  clock.Clock
	Logger *slog.Logger

	init     sync.Once
	reserves group[Entry, Entry]
	finishes group[Answer, struct{}]
}

func (k *Keeper) start() {
	k.init.Do(func() {
		k.reserves.gatherer, k.finishes.gatherer = gather.New(), gather.New()
		k.reserves.run = func(ctx context.Context, es []Entry) ([]Entry, error) {
			ctx, cancel := context.WithTimeout(Detach(ctx), storeTimeout)
			defer cancel()
			return k.Store.ReserveIdempotencyKeys(ctx, es, k.Clock.Now().UTC().Truncate(time.Microsecond))
		}
		k.finishes.run = func(ctx context.Context, as []Answer) ([]struct{}, error) {
			ctx, cancel := context.WithTimeout(Detach(ctx), storeTimeout)
			defer cancel()
			return make([]struct{}, len(as)), k.Store.FinishIdempotencyKeys(ctx, as)
		}
	})
}

// storeTimeout bounds one batch's store transaction.
const storeTimeout = 15 * time.Second

// PurgeEvery is how often Run deletes expired keys.
const PurgeEvery = 10 * time.Minute

// purgeBatch bounds one purge statement.
const purgeBatch = 1000

// Begin reserves key in scope for a request whose fingerprint is fp. On
// Proceed the returned claim goes in the request's context (WithClaim);
// on Replay the entry holds the answer.
func (k *Keeper) Begin(ctx context.Context, scope, key string, fp []byte) (Outcome, Entry, *Claim, error) {
	k.start()
	now := k.Clock.Now().UTC().Truncate(time.Microsecond)
	want := Entry{
		Scope: scope, Key: key, Fingerprint: fp, Token: NewToken(), State: Running,
		CreatedAt: now, LeaseUntil: now.Add(Lease), ExpiresAt: now.Add(TTL),
	}
	got, err := k.reserves.do(ctx, want)
	if err != nil {
		return 0, Entry{}, nil, err
	}
	switch {
	case got.Token == want.Token:
		return Proceed, got, &Claim{Scope: scope, Key: key, Token: want.Token}, nil
	case !bytes.Equal(got.Fingerprint, fp):
		return Mismatch, got, nil, nil
	case got.State == Done:
		return Replay, got, nil, nil
	case got.State == Stored && !now.Before(got.LeaseUntil):
		return Lost, got, nil, nil
	default:
		return InFlight, got, nil, nil
	}
}

// Keep reports whether an answer of status is kept for the key's retries;
// otherwise the key is released. A 5xx means nothing was stored and a 429
// that the request was not run, so a retry must run afresh.
func Keep(status int) bool {
	return status < 500 && status != 429
}

// Finish records the answer of a request that Began with claim c: kept
// for retries when Keep(status); else the key is released, unless the
// request's write was stored nonetheless (c is bound: a later step, say
// its audit record, failed), when the key stays stored without an answer
// so that a retry is refused (Lost) rather than run again. It runs on
// after ctx ends (a client that went away must still find its answer).
func (k *Keeper) Finish(ctx context.Context, c *Claim, status int, contentType string, body []byte) error {
	k.start()
	a := Answer{Scope: c.Scope, Key: c.Key, Token: c.Token, Status: status, ContentType: contentType, Body: body}
	if !Keep(status) {
		if c.Bound() {
			return nil
		}
		a = Answer{Scope: c.Scope, Key: c.Key, Token: c.Token, Release: true}
	}
	_, err := k.finishes.do(ctx, a)
	if err != nil && a.Release {
		// The database is out of reach (the request failed for that
		// reason, most likely): keep trying in the background, so that the
		// key is free as soon as the database is back rather than when its
		// reservation lapses, while the client is retrying.
		go k.releaseLater(a, k.Clock.Now().Add(Lease))
	}
	return err
}

// releaseRetry is the pause between attempts of a release that failed.
const releaseRetry = 250 * time.Millisecond

// releaseLater tries a's release again until it succeeds or until, at
// deadline, the reservation lapses by itself.
func (k *Keeper) releaseLater(a Answer, deadline time.Time) {
	for k.Clock.Now().Before(deadline) {
		t := k.Clock.NewTimer(releaseRetry)
		<-t.C()
		if _, err := k.finishes.do(context.Background(), a); err == nil {
			return
		}
	}
}

// Purge deletes every key expired by now, in batches.
func (k *Keeper) Purge(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := k.Store.PurgeIdempotencyKeys(ctx, k.Clock.Now().UTC(), purgeBatch)
		total += n
		if err != nil || n < purgeBatch {
			return total, err
		}
	}
}

// Run purges expired keys every PurgeEvery until ctx ends.
func (k *Keeper) Run(ctx context.Context) {
	t := k.Clock.NewTicker(PurgeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if _, err := k.Purge(ctx); err != nil && ctx.Err() == nil && k.Logger != nil {
				k.Logger.Warn("idempotency: purging expired keys", "err", err)
			}
		}
	}
}
