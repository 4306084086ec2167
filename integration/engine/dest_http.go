package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/charset"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/runtime/host"
)

// httpSender posts each output to the destination's URL.
type httpSender struct {
	dest   *config.Destination
	client *http.Client
}

func newHTTPSender(d *config.Destination) *httpSender {
	return &httpSender{dest: d, client: &http.Client{Timeout: d.HTTP.Timeout}}
}

var contentTypes = map[config.Format]string{
	config.FormatHL7v2: "x-application/hl7-v2+er7",
	config.FormatJSON:  "application/json",
	config.FormatCSV:   "text/csv; charset=utf-8",
	config.FormatText:  "text/plain; charset=utf-8",
}

func (h *httpSender) send(ctx context.Context, ec host.EffectContext, a sendArgs) error {
	c := h.dest.HTTP
	req, err := http.NewRequestWithContext(ctx, c.Method, c.URL, bytes.NewReader(a.Output))
	if err != nil {
		return actor.Permanent(fmt.Errorf("build the request: %w", err))
	}
	cs, err := charset.Lookup(a.Charset)
	if err != nil {
		cs = charset.UTF8 // the lane resolved it; cannot happen
	}
	req.Header.Set("Content-Type", mimeType(h.dest.Format, cs))
	req.Header.Set("Idempotency-Key", ec.ID) // the same on every attempt of this delivery
	req.Header.Set("X-Ductus-Message-Id", a.M)
	for k, v := range c.Headers {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", c.Method, redact(c.URL), err) // network errors and timeouts: retry
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests, code >= 500:
		return fmt.Errorf("%s %s: %s: %s", c.Method, redact(c.URL), resp.Status, bytes.TrimSpace(body))
	default:
		return actor.Permanent(fmt.Errorf("%s %s refused: %s: %s", c.Method, redact(c.URL), resp.Status, bytes.TrimSpace(body)))
	}
}

func (h *httpSender) close() error { h.client.CloseIdleConnections(); return nil }
