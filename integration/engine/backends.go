package engine

import (
	"context"

	"github.com/ductus/ductus/adapters/dburl"
	"github.com/ductus/ductus/integration/config"
	"github.com/ductus/ductus/runtime/store"
)

// The engine opens its database the way any service does, through dburl:
// the project's configuration has already turned its database URL into a
// driver and a DSN (with a relative SQLite path resolved against the
// project), so each opener names the driver's Target.
func init() {
	for driver, name := range map[string]string{
		config.DriverSQLite:   dburl.SQLite,
		config.DriverPostgres: dburl.Postgres,
		config.DriverMySQL:    dburl.MySQL,
	} {
		openers[driver] = func(ctx context.Context, dsn string) (store.Backend, error) {
			return dburl.Target{Driver: name, DSN: dsn}.Open(ctx, dburl.Options{})
		}
	}
}
