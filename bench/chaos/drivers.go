package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// post is one event post as its poster saw it, over all its attempts.
type post struct {
	counts   []int64 // the events' count fields, unique over the run
	acked    bool    // answered 200 with every event accepted
	fiveXX   int     // attempts answered 5xx
	replayed bool    // a 5xx attempt was followed by a replayed success: it had stored
	lastFive bool    // the final answer was a 5xx
}

// ledger is what the clients saw.
type ledger struct {
	mu        sync.Mutex
	posts     []post
	successes [][2]time.Time // start and end of every acknowledged post attempt
	plainSeen map[int64]int  // count -> times a plain retrieval handed it out
	ackSeen   map[int64]int  // count -> times an acknowledged retrieval handed it out (processed)
	ackPages  map[int64]int  // page -> confirmations answered 204
	dropped   int            // acknowledged pages a poller dropped before confirming
	lapsed    int            // confirmations answered 409
	plainIdle int            // consecutive empty plain pages since the posters stopped
	ackIdle   int
	exports   []string // export job ids
	counts    map[string]int
	// rotated are the signing-key versions made during the run ("key
	// kid"); rotateFailed the rotations no process answered.
	rotated      []string
	rotateFailed int
}

func newLedger() *ledger {
	return &ledger{plainSeen: map[int64]int{}, ackSeen: map[int64]int{}, ackPages: map[int64]int{}, counts: map[string]int{}}
}

func (l *ledger) count(name string) {
	l.mu.Lock()
	l.counts[name]++
	l.mu.Unlock()
}

// poster posts batches of events, each with a unique count, with an
// Idempotency-Key (ignored by a server without the feature). With retry,
// a post that fails is sent again, same key and body, until acknowledged
// or retryCtx ends.
func poster(ctx, retryCtx context.Context, b *balancer, f *fixture, l *ledger, id, perPost int, retry bool) {
	r := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for n := int64(0); ctx.Err() == nil; n++ {
		p := post{}
		body := map[string]any{}
		for i := range perPost {
			c := int64(id)<<40 | n<<8 | int64(i)
			p.counts = append(p.counts, c)
			ty := "10001"
			if i == perPost-1 && perPost > 1 {
				ty = "10002" // not subscribed: notifications and streams skip it
			}
			body["e"+strconv.Itoa(i)] = map[string]any{"event_type_id": ty, "count": c, "end_user": map[string]string{"id": "u-" + strconv.Itoa(r.IntN(100))}}
		}
		key := fmt.Sprintf("chaos-%s-%d-%d", run, id, n)
		prev5xx := false
		for {
			start := time.Now()
			a := b.do(retryCtx, b.pick(r).URL(), request{area: "events-post", method: "POST", path: "/events/v1/events", bearer: f.access(), body: body,
				header: map[string]string{"Idempotency-Key": key}, once: !retry})
			if a.status == http.StatusOK && allAccepted(a.body, perPost) {
				p.acked, p.lastFive = true, false
				if prev5xx && a.header.Get("Idempotent-Replayed") == "true" {
					p.replayed = true
				}
				l.mu.Lock()
				l.successes = append(l.successes, [2]time.Time{start, time.Now()})
				l.mu.Unlock()
				break
			}
			switch {
			case a.status >= 500:
				p.fiveXX++
				prev5xx, p.lastFive = true, true
			case a.status == 0:
				prev5xx, p.lastFive = false, false // unknown outcome
			default:
				p.lastFive = false
			}
			if !retry || retryCtx.Err() != nil {
				break
			}
			sleepCtx(retryCtx, 100*time.Millisecond)
		}
		l.mu.Lock()
		l.posts = append(l.posts, p)
		l.mu.Unlock()
	}
}

func allAccepted(body []byte, n int) bool {
	var m map[string]struct{ Status string }
	if err := json.Unmarshal(body, &m); err != nil || len(m) != n {
		return false
	}
	for _, v := range m {
		if v.Status != "accepted" {
			return false
		}
	}
	return true
}

// page is a notification retrieval's answer.
type page struct {
	Page    int64
	Size    int
	Results []struct{ Count int64 }
}

// plainPoller retrieves (consumes) pages of the plain subscription, with
// and without long polling.
func plainPoller(ctx context.Context, b *balancer, f *fixture, l *ledger, id int) {
	r := rand.New(rand.NewPCG(uint64(100+id), uint64(time.Now().UnixNano())))
	for i := 0; ctx.Err() == nil; i++ {
		q := "?wait=0"
		if (i+id)%2 == 0 {
			q = "?wait=3"
		}
		a := b.do(ctx, b.pick(r).URL(), request{area: "notify-plain", method: "GET", path: "/notification/v1/subscriptions/" + f.plainSub + "/notifications" + q, bearer: f.access()})
		var p page
		if a.status != 200 || json.Unmarshal(a.body, &p) != nil {
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		l.mu.Lock()
		for _, e := range p.Results {
			l.plainSeen[e.Count]++
		}
		if p.Size == 0 {
			l.plainIdle++
		} else {
			l.plainIdle = 0
		}
		l.mu.Unlock()
	}
}

// ackPoller leases pages of the acknowledged subscription and confirms
// them; with probability drop it abandons a page before processing it, as
// a poller that dies would.
func ackPoller(ctx context.Context, b *balancer, f *fixture, l *ledger, id int, drop float64) {
	r := rand.New(rand.NewPCG(uint64(200+id), uint64(time.Now().UnixNano())))
	base := "/notification/v1/subscriptions/" + f.ackSub + "/notifications"
	for i := 0; ctx.Err() == nil; i++ {
		q := "?ack=true&wait=0"
		if (i+id)%2 == 0 {
			q = "?ack=true&wait=3"
		}
		a := b.do(ctx, b.pick(r).URL(), request{area: "notify-ack", method: "GET", path: base + q, bearer: f.access()})
		var p page
		if a.status != 200 || json.Unmarshal(a.body, &p) != nil {
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		if p.Size == 0 {
			l.mu.Lock()
			l.ackIdle++
			l.mu.Unlock()
			continue
		}
		if r.Float64() < drop {
			l.mu.Lock()
			l.dropped++
			l.mu.Unlock()
			continue
		}
		l.mu.Lock()
		l.ackIdle = 0
		for _, e := range p.Results {
			l.ackSeen[e.Count]++
		}
		l.mu.Unlock()
		for try := 0; try < 10 && ctx.Err() == nil; try++ {
			a := b.do(ctx, b.pick(r).URL(), request{area: "notify-ack-confirm", method: "POST", path: base + "/ack", bearer: f.access(), body: map[string]int64{"page": p.Page}})
			if a.status == http.StatusNoContent {
				l.mu.Lock()
				l.ackPages[p.Page]++
				l.mu.Unlock()
				break
			}
			if a.status == http.StatusConflict {
				l.mu.Lock()
				l.lapsed++
				l.mu.Unlock()
				break
			}
			sleepCtx(ctx, 100*time.Millisecond)
		}
	}
}

// every runs fn every d until ctx ends.
func every(ctx context.Context, d time.Duration, fn func()) {
	for ctx.Err() == nil {
		fn()
		sleepCtx(ctx, d)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// arrival is one delivery a receiver got.
type arrival struct {
	seq int64
	at  time.Time
}

// receivers are the event-stream endpoints: /r/{i} records each delivery
// and answers 204, always (healthy receivers).
type receivers struct {
	mu  sync.Mutex
	got map[int][]arrival
}

func (rc *receivers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
	var ce struct{ Sequence string }
	if err != nil || json.NewDecoder(r.Body).Decode(&ce) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	seq, _ := strconv.ParseInt(ce.Sequence, 10, 64)
	rc.mu.Lock()
	rc.got[i] = append(rc.got[i], arrival{seq, time.Now()})
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// firstAfter is the time of receiver i's first delivery after t.
func (rc *receivers) firstAfter(i int, t time.Time) (time.Time, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, a := range rc.got[i] {
		if a.at.After(t) {
			return a.at, true
		}
	}
	return time.Time{}, false
}

// signingRotations are the rotations of the platform's signing keys during
// a run: when (a share of the run) and which key.
var signingRotations = []struct {
	at  float64
	key string
}{{0.3, "platform-jwt"}, {0.45, "platform-oidc-rs256"}, {0.6, "platform-jwt"}}

// rotatePublishedFor is how long before it signs a rotated version is
// published: the scheduled rotation's 10 minutes, compressed to the run.
const rotatePublishedFor = 3 * time.Second

// rotateSigningKeys rotates the platform's signing keys during the run, as
// the root tenant-admin, each version published rotatePublishedFor before
// it signs, so that the tokens the new versions sign meet processes that
// were killed, stalled or cut off from the database when it was made. A
// rotation is retried through other processes until one answers 201.
func rotateSigningKeys(ctx context.Context, b *balancer, f *fixture, l *ledger, start time.Time, d time.Duration, r *rand.Rand) {
	for _, rot := range signingRotations {
		sleepCtx(ctx, time.Until(start.Add(time.Duration(float64(d)*rot.at))))
		if ctx.Err() != nil {
			return
		}
		// The RS256 key is made on first use: a JWKS read makes it.
		_, err := b.call(ctx, r, 200, request{area: "signing-key rotate", method: "GET", path: "/.well-known/jwks.json"})
		var a answer
		if err == nil {
			a, err = b.call(ctx, r, 200, request{area: "signing-key rotate", method: "POST", path: "/api/v1/auth/tokens/",
				body: map[string]string{"name": "admin", "password": f.password, "auth_domain": "root"}})
		}
		var kid string
		if err == nil {
			jwt, _ := a.json()["jwt"].(string)
			at := time.Now().Add(rotatePublishedFor).UTC().Format(time.RFC3339Nano)
			a, err = b.call(ctx, r, 201, request{area: "signing-key rotate", method: "POST", path: "/api/v1/vault/keys2/" + rot.key + "/rotate",
				bearer: jwt, body: map[string]string{"activationDate": at}})
			kid, _ = a.json()["kid"].(string)
		}
		l.mu.Lock()
		if err != nil || kid == "" {
			l.rotateFailed++
		} else {
			l.rotated = append(l.rotated, rot.key+" "+kid)
		}
		l.mu.Unlock()
	}
}
