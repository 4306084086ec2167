package engine

import (
	"context"

	"github.com/ductus/ductus/adapters/postgres"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/runtime/store"
)

func init() {
	openers[config.DriverPostgres] = func(ctx context.Context, dsn string) (store.Backend, error) {
		return postgres.Open(ctx, postgres.Config{DSN: dsn})
	}
}
