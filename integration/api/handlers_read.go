package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/common/expfmt"
)

// pageSize is a page's length from the limit parameter (the document
// bounds it to 1..500).
func pageSize(limit *int) int {
	if limit == nil {
		return 50
	}
	return *limit
}

func (s *server) GetHealth(context.Context, GetHealthRequestObject) (GetHealthResponseObject, error) {
	return GetHealth200JSONResponse{Status: "ok"}, nil
}

// rawJSON answers bytes that are JSON already.
type rawJSON []byte

func (b rawJSON) VisitGetOpenAPIResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	return err
}

func (s *server) GetOpenAPI(context.Context, GetOpenAPIRequestObject) (GetOpenAPIResponseObject, error) {
	b, err := DocumentJSON()
	if err != nil {
		return nil, err
	}
	return rawJSON(b), nil
}

func (s *server) GetEngine(ctx context.Context, _ GetEngineRequestObject) (GetEngineResponseObject, error) {
	info, err := s.eng.Info(ctx)
	if err != nil {
		return nil, err
	}
	return GetEngine200JSONResponse(info), nil
}

func (s *server) WhoAmI(ctx context.Context, _ WhoAmIRequestObject) (WhoAmIResponseObject, error) {
	return WhoAmI200JSONResponse(principalView(principalFrom(ctx))), nil
}

func (s *server) ListInterfaces(ctx context.Context, _ ListInterfacesRequestObject) (ListInterfacesResponseObject, error) {
	ifs, err := s.eng.Interfaces(ctx)
	if err != nil {
		return nil, err
	}
	return ListInterfaces200JSONResponse{Interfaces: ifs}, nil
}

func (s *server) GetHotspots(ctx context.Context, req GetHotspotsRequestObject) (GetHotspotsResponseObject, error) {
	r, err := s.eng.Hotspots(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return GetHotspots200JSONResponse(r), nil
}

func (s *server) ListMessages(ctx context.Context, req ListMessagesRequestObject) (ListMessagesResponseObject, error) {
	limit := pageSize(req.Params.Limit)
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	// One more than the page, to know whether another page follows.
	q := MessageQuery{Interface: req.Name, Before: str(req.Params.Before), Limit: limit + 1, Key: str(req.Params.Key),
		DedupeKey: str(req.Params.DedupeKey), Type: str(req.Params.Type)}
	if req.Params.Status != nil {
		q.Status = string(*req.Params.Status)
	}
	if req.Params.Since != nil {
		q.Since = *req.Params.Since
	}
	if req.Params.Until != nil {
		q.Until = *req.Params.Until
	}
	msgs, err := s.eng.Messages(ctx, q)
	if err != nil {
		return nil, err
	}
	page := MessagePage{Messages: msgs}
	if len(msgs) > limit {
		page.Messages = msgs[:limit]
		next := msgs[limit-1].Id
		page.Next = &next
	}
	return ListMessages200JSONResponse(page), nil
}

func (s *server) GetMessage(ctx context.Context, req GetMessageRequestObject) (GetMessageResponseObject, error) {
	m, err := s.eng.Message(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return GetMessage200JSONResponse(m), nil
}

// GetMessagePayload writes the read's audit row before it reads: a payload
// is never answered that the log does not show was asked for, and if the
// row cannot be written the read is refused.
func (s *server) GetMessagePayload(ctx context.Context, req GetMessagePayloadRequestObject) (GetMessagePayloadResponseObject, error) {
	p := principalFrom(ctx)
	if err := s.acc.Audit(ctx, nil, p, "getMessagePayload", req.Id, "ok", nil); err != nil {
		return nil, fmt.Errorf("%w (the payload read was refused: it could not be audited)", err)
	}
	m, err := s.eng.MessagePayload(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return GetMessagePayload200JSONResponse(m), nil
}

// metricsText answers the registry in Prometheus' text format.
type metricsText []byte

func (b metricsText) VisitGetMetricsResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	return err
}

func (s *server) GetMetrics(context.Context, GetMetricsRequestObject) (GetMetricsResponseObject, error) {
	mfs, err := s.eng.Gatherer().Gather()
	if err != nil {
		return nil, fmt.Errorf("api: gather metrics: %w", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, fmt.Errorf("api: encode metrics: %w", err)
		}
	}
	return metricsText(buf.Bytes()), nil
}

func (s *server) ListQuarantine(ctx context.Context, req ListQuarantineRequestObject) (ListQuarantineResponseObject, error) {
	iface, before := "", ""
	if req.Params.Interface != nil {
		iface = *req.Params.Interface
	}
	if req.Params.Before != nil {
		before = *req.Params.Before
	}
	page, err := s.eng.Quarantine(ctx, iface, before, pageSize(req.Params.Limit))
	if err != nil {
		return nil, err
	}
	return ListQuarantine200JSONResponse(page), nil
}
