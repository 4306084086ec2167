package engine

import (
	"errors"

	"github.com/ductus/ductus/integration/config"
)

// These are filled in as the MLLP network package and the file watcher land.

var errNotYet = errors.New("not built into this engine yet")

func (e *Engine) newMLLPSender(d *config.Destination) (sender, error) { return nil, errNotYet }
func (e *Engine) newMLLPSource(ir *ifaceRuntime) (source, error)      { return nil, errNotYet }
