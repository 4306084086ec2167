package engine

import (
	"context"

	"github.com/ductus/ductus/adapters/mysql"
	"github.com/ductus/ductus/adapters/postgres"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/integration/ixstore"
)

func init() {
	openers[config.DriverPostgres] = func(ctx context.Context, dsn string) (ixstore.Backend, error) {
		return postgres.Open(ctx, postgres.Config{DSN: dsn})
	}
	openers[config.DriverMySQL] = func(ctx context.Context, dsn string) (ixstore.Backend, error) {
		return mysql.Open(ctx, mysql.Config{DSN: dsn})
	}
}
