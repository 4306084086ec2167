package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/ductus/ductus/runtime/store"
)

// ProcessRegister implements store.Backend.
func (b *Backend) ProcessRegister(ctx context.Context, p *store.ProcessInfo) error {
	meta := p.Metadata
	if len(meta) == 0 {
		meta = []byte("{}")
	}
	return b.write(ctx, nil, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO ductus_processes (id, kind, host, pid, version, metadata, started_at, heartbeat_at)
			VALUES (?, ?, ?, ?, ?, ?, `+now+`, `+now+`)`, p.ID, p.Kind, p.Host, p.PID, p.Version, string(meta))
		return classify("register the process", err)
	})
}

// ProcessHeartbeat implements store.Backend.
func (b *Backend) ProcessHeartbeat(ctx context.Context, id string) error {
	return b.write(ctx, nil, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE ductus_processes SET heartbeat_at = `+now+` WHERE id = ?`, id)
		return classify("heartbeat", err)
	})
}

// ProcessStop implements store.Backend.
func (b *Backend) ProcessStop(ctx context.Context, id string) error {
	return b.write(ctx, nil, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `UPDATE ductus_processes SET stopped_at = `+now+`, heartbeat_at = `+now+` WHERE id = ?`, id)
		return classify("mark the process stopped", err)
	})
}

// ProcessPrune implements store.Backend.
func (b *Backend) ProcessPrune(ctx context.Context, olderThan time.Duration) (int, error) {
	var n int64
	err := b.write(ctx, nil, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM ductus_processes WHERE heartbeat_at < `+now+` - ?`, store.Micros(olderThan))
		if err != nil {
			return classify("prune process rows", err)
		}
		n, err = res.RowsAffected()
		return classify("prune process rows", err)
	})
	return int(n), err
}

// ProcessList implements store.Backend.
func (b *Backend) ProcessList(ctx context.Context) ([]store.ProcessInfo, error) {
	rows, err := b.r.QueryContext(ctx, `SELECT id, kind, host, pid, version, metadata, started_at, heartbeat_at, stopped_at
		FROM ductus_processes ORDER BY started_at, id`)
	if err != nil {
		return nil, classify("list processes", err)
	}
	defer rows.Close()
	var out []store.ProcessInfo
	for rows.Next() {
		var p store.ProcessInfo
		var meta string
		var started, beat int64
		var stopped sql.NullInt64
		if err := rows.Scan(&p.ID, &p.Kind, &p.Host, &p.PID, &p.Version, &meta, &started, &beat, &stopped); err != nil {
			return nil, classify("list processes", err)
		}
		p.Metadata = []byte(meta)
		p.StartedAt = micros(sql.NullInt64{Int64: started, Valid: true})
		p.HeartbeatAt = micros(sql.NullInt64{Int64: beat, Valid: true})
		p.StoppedAt = micros(stopped)
		out = append(out, p)
	}
	return out, classify("list processes", rows.Err())
}
