package sqlite_test

import (
	"testing"

	"github.com/ductus/ductus/runtime/scenariotest"
)

func TestScenarios(t *testing.T) { scenariotest.Run(t, open) }
