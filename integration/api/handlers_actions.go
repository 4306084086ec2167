package api

import (
	"context"
	"fmt"
	"strings"
)

// audited runs an action on a message after its audit row is written (an
// action that cannot be audited is refused), and records a second row,
// refused or failed, when the action then fails.
func (s *server) audited(ctx context.Context, action, id string, detail map[string]any, act func() error) error {
	p := principalFrom(ctx)
	if err := s.acc.Audit(ctx, nil, p, action, id, "ok", detail); err != nil {
		return fmt.Errorf("%w (the %s was refused: it could not be audited)", err, action)
	}
	err := act()
	if err != nil {
		outcome := "failed"
		if statusOf(err) < 500 {
			outcome = "refused" // nothing to act on, no such message
		}
		_ = s.acc.Audit(ctx, nil, p, action, id, outcome, map[string]any{"error": err.Error()})
	}
	return err
}

// destinations is an optional destination list as an audit detail.
func destinations(dests []string) map[string]any {
	d := map[string]any{}
	if len(dests) > 0 {
		d["destinations"] = strings.Join(dests, ",")
	}
	return d
}

func (s *server) ResendMessage(ctx context.Context, req ResendMessageRequestObject) (ResendMessageResponseObject, error) {
	var dests []string
	if req.Body != nil && req.Body.Destinations != nil {
		dests = *req.Body.Destinations
	}
	var resent []ResentDelivery
	err := s.audited(ctx, "resendMessage", req.Id, destinations(dests), func() (err error) {
		resent, err = s.eng.Resend(ctx, req.Id, dests)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ResendMessage200JSONResponse{Message: req.Id, Deliveries: resent}, nil
}

func (s *server) DismissMessage(ctx context.Context, req DismissMessageRequestObject) (DismissMessageResponseObject, error) {
	var dests []string
	if req.Body.Destinations != nil {
		dests = *req.Body.Destinations
	}
	detail := destinations(dests)
	detail["reason"] = req.Body.Reason
	var done []string
	err := s.audited(ctx, "dismissMessage", req.Id, detail, func() (err error) {
		done, err = s.eng.Dismiss(ctx, req.Id, dests, principalFrom(ctx).Name, req.Body.Reason)
		return err
	})
	if err != nil {
		return nil, err
	}
	return DismissMessage200JSONResponse{Message: req.Id, Destinations: done}, nil
}

// bulkDetail is a bulk action's audit detail: the IDs, and the
// destinations when named.
func bulkDetail(ids, dests []string) map[string]any {
	d := destinations(dests)
	d["ids"] = ids
	return d
}

func (s *server) BulkResend(ctx context.Context, req BulkResendRequestObject) (BulkResendResponseObject, error) {
	var dests []string
	if req.Body.Destinations != nil {
		dests = *req.Body.Destinations
	}
	var out []Resent
	err := s.audited(ctx, "bulkResend", fmt.Sprintf("%d messages", len(req.Body.Ids)), bulkDetail(req.Body.Ids, dests), func() (err error) {
		out, err = s.eng.BulkResend(ctx, req.Body.Ids, dests)
		return err
	})
	if err != nil {
		return nil, err
	}
	return BulkResend200JSONResponse{Messages: out}, nil
}

func (s *server) BulkDismiss(ctx context.Context, req BulkDismissRequestObject) (BulkDismissResponseObject, error) {
	var dests []string
	if req.Body.Destinations != nil {
		dests = *req.Body.Destinations
	}
	detail := bulkDetail(req.Body.Ids, dests)
	detail["reason"] = req.Body.Reason
	var out []Dismissed
	err := s.audited(ctx, "bulkDismiss", fmt.Sprintf("%d messages", len(req.Body.Ids)), detail, func() (err error) {
		out, err = s.eng.BulkDismiss(ctx, req.Body.Ids, dests, principalFrom(ctx).Name, req.Body.Reason)
		return err
	})
	if err != nil {
		return nil, err
	}
	return BulkDismiss200JSONResponse{Messages: out}, nil
}

func (s *server) EditMessage(ctx context.Context, req EditMessageRequestObject) (EditMessageResponseObject, error) {
	var dests []string
	if req.Body.Destinations != nil {
		dests = *req.Body.Destinations
	}
	detail := destinations(dests)
	detail["reason"] = req.Body.Reason
	var out Edited
	err := s.audited(ctx, "editMessage", req.Id, detail, func() (err error) {
		out, err = s.eng.Edit(ctx, req.Id, []byte(req.Body.Payload), dests, principalFrom(ctx).Name, req.Body.Reason)
		if err == nil {
			// The copy is a message of its own: a row names it, so the log
			// finds the edit from either side. The edit has happened by
			// now, so a failure here is not the caller's; the first row
			// stands, and the copy's meta names the original.
			_ = s.acc.Audit(ctx, nil, principalFrom(ctx), "editMessage", out.Copy, "ok", map[string]any{"edited_from": req.Id})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return EditMessage201JSONResponse(out), nil
}

func (s *server) PauseDestination(ctx context.Context, req PauseDestinationRequestObject) (PauseDestinationResponseObject, error) {
	var out Pause
	err := s.audited(ctx, "pauseDestination", req.Name+"/"+req.Destination, map[string]any{"reason": req.Body.Reason}, func() (err error) {
		out, err = s.eng.PauseDestination(ctx, req.Name, req.Destination, principalFrom(ctx).Name, req.Body.Reason)
		return err
	})
	if err != nil {
		return nil, err
	}
	return PauseDestination200JSONResponse(out), nil
}

func (s *server) ResumeDestination(ctx context.Context, req ResumeDestinationRequestObject) (ResumeDestinationResponseObject, error) {
	err := s.audited(ctx, "resumeDestination", req.Name+"/"+req.Destination, nil, func() error {
		return s.eng.ResumeDestination(ctx, req.Name, req.Destination, principalFrom(ctx).Name)
	})
	if err != nil {
		return nil, err
	}
	return ResumeDestination204Response{}, nil
}

func (s *server) GetDrain(ctx context.Context, _ GetDrainRequestObject) (GetDrainResponseObject, error) {
	d, err := s.eng.DrainStatus(ctx)
	if err != nil {
		return nil, err
	}
	return GetDrain200JSONResponse(d), nil
}

func (s *server) StartDrain(ctx context.Context, req StartDrainRequestObject) (StartDrainResponseObject, error) {
	stop := req.Body != nil && req.Body.Stop != nil && *req.Body.Stop
	var d Drain
	err := s.audited(ctx, "startDrain", "engine", map[string]any{"stop": stop}, func() (err error) {
		d, err = s.eng.StartDrain(ctx, stop)
		return err
	})
	if err != nil {
		return nil, err
	}
	return StartDrain200JSONResponse(d), nil
}

func (s *server) StopDrain(ctx context.Context, _ StopDrainRequestObject) (StopDrainResponseObject, error) {
	var d Drain
	err := s.audited(ctx, "stopDrain", "engine", nil, func() (err error) {
		d, err = s.eng.StopDrain(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return StopDrain200JSONResponse(d), nil
}
