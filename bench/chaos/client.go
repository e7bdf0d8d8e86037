package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// balancer stands for the load balancer: each request goes to a random
// process the harness believes is up (any process when none is).
type balancer struct {
	servers []*server
	h       *http.Client
	sent    atomic.Int64 // requests sent, for -max-requests
	limit   int64
	stop    context.CancelFunc // ends the drive when the limit is reached

	mu     sync.Mutex
	status map[string]map[int]int // area -> status (0: transport error) -> count
}

func (b *balancer) pick(r *rand.Rand) *server {
	var up []*server
	for _, s := range b.servers {
		if s.Up() {
			up = append(up, s)
		}
	}
	if len(up) == 0 {
		up = b.servers
	}
	return up[r.IntN(len(up))]
}

// answer is one response.
type answer struct {
	status int // 0 for a transport error
	body   []byte
	header http.Header
	err    error
}

func (a answer) json() map[string]any {
	var m map[string]any
	json.Unmarshal(a.body, &m)
	return m
}

// request is one HTTP call; body is JSON unless form or raw is set.
type request struct {
	area, method, path, bearer, auth string
	body                             any
	form                             url.Values
	raw                              []byte
	contentType                      string
	header                           map[string]string
	// once keeps net/http from sending the request again by itself: it
	// resends a request with an Idempotency-Key whose reused connection
	// died before the answer, as it does a GET.
	once bool
}

// do sends req to srv (a process's base URL) and tallies its status.
func (b *balancer) do(ctx context.Context, srv string, req request) answer {
	if n := b.sent.Add(1); b.limit > 0 && n > b.limit && b.stop != nil {
		b.stop()
	}
	var rd io.Reader
	ct := req.contentType
	switch {
	case req.raw != nil:
		rd = bytes.NewReader(req.raw)
	case req.form != nil:
		rd, ct = strings.NewReader(req.form.Encode()), "application/x-www-form-urlencoded"
	case req.body != nil:
		j, _ := json.Marshal(req.body)
		rd, ct = bytes.NewReader(j), "application/json"
	}
	var size int64 = -1
	if req.once && rd != nil {
		if l, ok := rd.(interface{ Len() int }); ok {
			size = int64(l.Len())
		}
		rd = struct{ io.Reader }{rd} // no GetBody: not replayable
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, srv+req.path, rd)
	if err != nil {
		return answer{err: err}
	}
	if size >= 0 {
		hr.ContentLength = size
	}
	if ct != "" {
		hr.Header.Set("Content-Type", ct)
	}
	if req.bearer != "" {
		hr.Header.Set("Authorization", "Bearer "+req.bearer)
	}
	if req.auth != "" {
		hr.Header.Set("Authorization", req.auth)
	}
	for k, v := range req.header {
		hr.Header.Set(k, v)
	}
	resp, err := b.h.Do(hr)
	a := answer{err: err}
	if err == nil {
		a.status, a.header = resp.StatusCode, resp.Header
		a.body, a.err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if a.err != nil {
			a.status = 0 // the answer was cut: as good as none
		}
	}
	if ctx.Err() == nil || a.status != 0 {
		b.tally(req.area, a.status)
	}
	return a
}

func (b *balancer) tally(area string, status int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.status[area] == nil {
		b.status[area] = map[int]int{}
	}
	b.status[area][status]++
}

// call sends req to a random live process, retrying transport errors and
// 5xx answers on others (for requests that are safe to repeat) until want
// is answered or tries run out.
func (b *balancer) call(ctx context.Context, r *rand.Rand, want int, req request) (answer, error) {
	var a answer
	for try := 0; try < 20 && ctx.Err() == nil; try++ {
		a = b.do(ctx, b.pick(r).URL(), req)
		if a.status == want {
			return a, nil
		}
		if a.status != 0 && a.status < 500 {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	if a.err != nil {
		return a, fmt.Errorf("%s %s: %w", req.method, req.path, a.err)
	}
	return a, fmt.Errorf("%s %s: %d, want %d: %.300s", req.method, req.path, a.status, want, a.body)
}
