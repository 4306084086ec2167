package mysql

import (
	"testing"

	"github.com/ductus/ductus/runtime/scenariotest"
	"github.com/ductus/ductus/runtime/store"
)

// TestScenarios runs the runtime scenario suite, unchanged, on the server.
func TestScenarios(t *testing.T) {
	admin(t)
	scenariotest.Run(t, func(t *testing.T) store.Backend { return openBackend(t, Config{}) })
}
