package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/ductus/ductus/actor"
	"github.com/ductus/ductus/integration/access"
	"github.com/ductus/ductus/integration/ixstore"
)

// exportPage is how many audit rows the export reads at a time.
const exportPage = 500

// ExportAudit streams the audit log as NDJSON, oldest first. The rows are
// read a page at a time as the client reads (auditExport pulls the next
// page when the last is written), so an export of millions of rows holds
// one page in memory and stops reading when the client goes. Its own audit
// row is written first; if it cannot be, nothing is exported.
func (s *server) ExportAudit(ctx context.Context, req ExportAuditRequestObject) (ExportAuditResponseObject, error) {
	p := ixstore.AuditListParams{OldestFirst: true, Limit: exportPage}
	detail := map[string]any{}
	if req.Params.Action != nil {
		p.Action, detail["action"] = *req.Params.Action, *req.Params.Action
	}
	if req.Params.Actor != nil {
		p.Actor, detail["actor"] = *req.Params.Actor, *req.Params.Actor
	}
	if req.Params.Since != nil {
		// The audit IDs are UUIDv7s: a time is an ID bound. After is
		// exclusive, so the bound is one below the millisecond's least ID.
		p.After, detail["since"] = idBefore(*req.Params.Since), req.Params.Since.UTC()
	}
	if req.Params.Until != nil {
		p.Before, detail["until"] = IDFloor(*req.Params.Until), req.Params.Until.UTC()
	}
	if req.Params.Since != nil && req.Params.Until != nil && !req.Params.Since.Before(*req.Params.Until) {
		return nil, fmt.Errorf("%w: since must be before until", actor.ErrInvalidArguments)
	}
	if err := s.acc.Audit(ctx, nil, principalFrom(ctx), "exportAudit", "audit", "ok", detail); err != nil {
		return nil, fmt.Errorf("%w (the export was refused: it could not be audited)", err)
	}
	return ExportAudit200ApplicationxNdjsonResponse{Body: &auditExport{ctx: ctx, acc: s.acc, p: p}}, nil
}

// auditExport is the export's body: an io.Reader that reads the next
// page of the log when it has written the last.
type auditExport struct {
	ctx  context.Context
	acc  *access.Store
	p    ixstore.AuditListParams
	buf  bytes.Buffer
	done bool
}

func (x *auditExport) Read(b []byte) (int, error) {
	for x.buf.Len() == 0 {
		if x.done {
			return 0, io.EOF
		}
		rows, err := x.acc.AuditLog(x.ctx, x.p)
		if err != nil {
			return 0, err
		}
		enc := json.NewEncoder(&x.buf)
		for _, r := range rows {
			if err := enc.Encode(auditView(r)); err != nil {
				return 0, err
			}
		}
		if len(rows) < x.p.Limit {
			x.done = true
		} else {
			x.p.After = rows[len(rows)-1].ID
		}
	}
	return x.buf.Read(b)
}

// uuidFloor is the least UUIDv7 made at t's millisecond or later (version
// 7, variant 10, every other bit zero): IDs made before t sort below it.
func IDFloor(t time.Time) string {
	ms := max(t.UnixMilli(), 0)
	return fmt.Sprintf("%08x-%04x-7000-8000-000000000000", ms>>16, ms&0xffff)
}

// idBefore is an ID that sorts just below every UUIDv7 of t's millisecond
// and above every one of earlier milliseconds: the millisecond before's
// greatest.
func idBefore(t time.Time) string {
	ms := t.UnixMilli() - 1
	if ms < 0 {
		return ""
	}
	return fmt.Sprintf("%08x-%04x-7fff-bfff-ffffffffffff", ms>>16, ms&0xffff)
}
