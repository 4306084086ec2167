package mysql

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
	_, err := b.execCount(ctx, "register the process", `INSERT INTO ductus_processes (id, kind, host, pid, version, metadata, started_at, heartbeat_at)
		VALUES (?, ?, ?, ?, ?, ?, NOW(6), NOW(6))`, p.ID, p.Kind, p.Host, p.PID, p.Version, string(meta))
	return err
}

// ProcessHeartbeat implements store.Backend.
func (b *Backend) ProcessHeartbeat(ctx context.Context, id string) error {
	_, err := b.execCount(ctx, "heartbeat", `UPDATE ductus_processes SET heartbeat_at = NOW(6) WHERE id = ?`, id)
	return err
}

// ProcessStop implements store.Backend.
func (b *Backend) ProcessStop(ctx context.Context, id string) error {
	_, err := b.execCount(ctx, "mark the process stopped", `UPDATE ductus_processes SET stopped_at = NOW(6), heartbeat_at = NOW(6) WHERE id = ?`, id)
	return err
}

// ProcessPrune implements store.Backend.
func (b *Backend) ProcessPrune(ctx context.Context, olderThan time.Duration) (int, error) {
	n, err := b.execCount(ctx, "prune process rows", `DELETE FROM ductus_processes WHERE heartbeat_at < NOW(6) - INTERVAL ? MICROSECOND`, store.Micros(olderThan))
	return int(n), err
}

// ProcessList implements store.Backend.
func (b *Backend) ProcessList(ctx context.Context) ([]store.ProcessInfo, error) {
	b.count(1)
	rows, err := b.db.QueryContext(ctx, `SELECT id, kind, host, pid, version, metadata, started_at, heartbeat_at, stopped_at
		FROM ductus_processes ORDER BY started_at, id`)
	if err != nil {
		return nil, classify("list processes", err)
	}
	defer rows.Close()
	var out []store.ProcessInfo
	for rows.Next() {
		var p store.ProcessInfo
		var meta string
		var stopped sql.NullTime
		if err := rows.Scan(&p.ID, &p.Kind, &p.Host, &p.PID, &p.Version, &meta, &p.StartedAt, &p.HeartbeatAt, &stopped); err != nil {
			return nil, classify("list processes", err)
		}
		p.Metadata = []byte(meta)
		p.StoppedAt = stopped.Time
		out = append(out, p)
	}
	return out, classify("list processes", rows.Err())
}
