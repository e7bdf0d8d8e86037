package httpapi

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/latchkey/latchkey/events"
	"github.com/latchkey/latchkey/fault"
	"github.com/latchkey/latchkey/idempotency"
	"github.com/latchkey/latchkey/identity"
)

// registerEvents adds area F (API.md "F. Events") and the admin route that
// emits native events.
func (s *Server) registerEvents() {
	base := s.opts.EventsURL
	post := s.oauthToken(styleProblem, identity.ScopeEventProducer)
	// A post carries up to events.MaxPostEvents events of up to
	// events.MaxEventBytes each, so it gets a larger limit than the
	// server's default.
	post.limit = events.MaxPostBytes
	s.handle("POST", base+"/v1/events", post.creating(), s.postEvents)
	s.handle("GET", base+"/v1/events", s.oauthToken(styleProblem, identity.ScopeEventConsumer), s.queryEvents)
	s.handle("POST", s.opts.BaseURL+"/admin/tenants/{tenantId}/events", s.platformJWT().creating(), s.emitEvent)
}

// readJSONBody reads a JSON body for handlers that pass it on undecoded:
// the content type (when sent) must be JSON and the nesting within
// MaxJSONDepth.
func readJSONBody(r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, fault.E(fault.Invalid, "Content-Type must be application/json")
		}
	}
	b, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if err := checkDepth(b, MaxJSONDepth); err != nil {
		return nil, err
	}
	if err := refuseNull(b); err != nil {
		return nil, err
	}
	return b, nil
}

func (s *Server) postEvents(w http.ResponseWriter, r *http.Request) error {
	defer observeSince(s.p.Metrics().EventsPost, time.Now())
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	idempotency.EncodeAnswer(r.Context(), jsonAnswer(http.StatusOK))
	res, err := s.p.PostEvents(r.Context(), principal(r), body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// eventPageJSON is a page of the events query on the wire; results are
// the stored event objects (resource H), newest first.
type eventPageJSON struct {
	Page    int               `json:"page"`
	Size    int               `json:"size"`
	Total   int               `json:"total"`
	Results []json.RawMessage `json:"results"`
}

func (s *Server) queryEvents(w http.ResponseWriter, r *http.Request) error {
	defer observeSince(s.p.Metrics().EventsQuery, time.Now())
	page, err := queryInt(r, "page", events.DefaultPage)
	if err != nil {
		return err
	}
	size, err := queryInt(r, "size", events.DefaultSize)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	res, err := s.p.QueryEvents(r.Context(), principal(r), events.QueryRequest{UserID: q.Get("user_id"), Filter: q.Get("filter"), Page: page, Size: size})
	if err != nil {
		return err
	}
	out := eventPageJSON{Page: res.Page, Size: res.Size, Total: res.Total, Results: make([]json.RawMessage, len(res.Results))}
	for i, e := range res.Results {
		out.Results[i] = e.Body
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) emitEvent(w http.ResponseWriter, r *http.Request) error {
	id, err := tenantID(r)
	if err != nil {
		return err
	}
	body, err := readJSONBody(r)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return fault.E(fault.Invalid, "request body is empty")
	}
	ev, err := s.p.EmitEvent(r.Context(), principal(r), id, body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]string{"id": ev.ID})
	return nil
}
