package engine

import (
	"context"

	"github.com/ductus/ductus/integration/config"
)

// buildSources binds every listener (so a port in use fails the start
// before anything runs) and arms the schedules.
func (e *Engine) buildSources(ctx context.Context) ([]source, error) {
	var out []source
	httpByAddr := map[string][]*ifaceRuntime{}
	var addrs []string
	for _, in := range e.proj.Interfaces {
		ir := e.ifaces[in.Name]
		switch in.Source.Type {
		case config.SourceHTTP:
			a := in.Source.HTTP.Listen
			if _, ok := httpByAddr[a]; !ok {
				addrs = append(addrs, a)
			}
			httpByAddr[a] = append(httpByAddr[a], ir)
		case config.SourceMLLP:
			s, err := e.newMLLPSource(ir)
			if err != nil {
				closeAll(out)
				return nil, err
			}
			out = append(out, s)
		case config.SourceFile:
			s, err := e.newFileSource(ir)
			if err != nil {
				closeAll(out)
				return nil, err
			}
			out = append(out, s)
		case config.SourceSchedule:
			if err := e.armSchedule(ctx, in); err != nil {
				closeAll(out)
				return nil, err
			}
		}
	}
	for _, a := range addrs {
		s, err := e.newHTTPSource(a, httpByAddr[a])
		if err != nil {
			closeAll(out)
			return nil, err
		}
		out = append(out, s)
	}
	e.mu.Lock()
	e.sources, e.listening = out, true
	e.mu.Unlock()
	return out, nil
}

// closer is a source holding a listener before it runs.
type closer interface{ closeListener() }

func closeAll(srcs []source) {
	for _, s := range srcs {
		if c, ok := s.(closer); ok {
			c.closeListener()
		}
	}
}

// Addr returns the address a source of the interface listens on (after
// Run has bound it), for tests and the dev command's messages.
func (e *Engine) Addr(iface string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.sources {
		switch x := s.(type) {
		case *httpSource:
			for _, ir := range x.ifaces {
				if ir.cfg.Name == iface {
					return x.ln.Addr().String()
				}
			}
		case addrSource:
			if x.iface() == iface {
				return x.addr()
			}
		}
	}
	return ""
}

// addrSource is a source listening for one interface.
type addrSource interface {
	iface() string
	addr() string
}
