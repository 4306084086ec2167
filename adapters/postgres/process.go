package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/ductus/ductus/runtime/store"
)

// ProcessRegister implements store.Backend.
func (b *Backend) ProcessRegister(ctx context.Context, p *store.ProcessInfo) error {
	meta := p.Metadata
	if len(meta) == 0 {
		meta = []byte("{}")
	}
	_, err := b.pool.Exec(ctx, `INSERT INTO ductus_processes (id, kind, host, pid, version, metadata, started_at, heartbeat_at)
		VALUES ($1, $2, $3, $4, $5, $6::json, now(), now())`, p.ID, p.Kind, p.Host, int32(p.PID), p.Version, meta)
	return classify("register the process", err)
}

// ProcessHeartbeat implements store.Backend.
func (b *Backend) ProcessHeartbeat(ctx context.Context, id string) error {
	_, err := b.pool.Exec(ctx, `UPDATE ductus_processes SET heartbeat_at = now() WHERE id = $1`, id)
	return classify("heartbeat", err)
}

// ProcessStop implements store.Backend.
func (b *Backend) ProcessStop(ctx context.Context, id string) error {
	_, err := b.pool.Exec(ctx, `UPDATE ductus_processes SET stopped_at = now(), heartbeat_at = now() WHERE id = $1`, id)
	return classify("mark the process stopped", err)
}

// ProcessPrune implements store.Backend.
func (b *Backend) ProcessPrune(ctx context.Context, olderThan time.Duration) (int, error) {
	tag, err := b.pool.Exec(ctx, `DELETE FROM ductus_processes WHERE heartbeat_at < now() - $1::bigint`+us, store.Micros(olderThan))
	if err != nil {
		return 0, classify("prune process rows", err)
	}
	return int(tag.RowsAffected()), nil
}

// ProcessList implements store.Backend.
func (b *Backend) ProcessList(ctx context.Context) ([]store.ProcessInfo, error) {
	rows, err := b.pool.Query(ctx, `SELECT id, kind, host, pid, version, metadata, started_at, heartbeat_at, stopped_at
		FROM ductus_processes ORDER BY started_at, id`)
	if err != nil {
		return nil, classify("list processes", err)
	}
	defer rows.Close()
	var out []store.ProcessInfo
	for rows.Next() {
		var p store.ProcessInfo
		var pid int32
		var stopped pgtype.Timestamptz
		if err := rows.Scan(&p.ID, &p.Kind, &p.Host, &pid, &p.Version, &p.Metadata, &p.StartedAt, &p.HeartbeatAt, &stopped); err != nil {
			return nil, classify("list processes", err)
		}
		p.PID = int(pid)
		if stopped.Valid {
			p.StoppedAt = stopped.Time
		}
		out = append(out, p)
	}
	return out, classify("list processes", rows.Err())
}
