package actor

import (
	"fmt"
	"sort"
	"sync"
)

// Registry maps persisted type names to their definitions. Dispatch goes
// only through it: a type name read from the database is looked up here and
// never used to build anything else.
type Registry struct {
	mu    sync.RWMutex
	types map[string]Definition
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{types: map[string]Definition{}} }

// Register adds a definition, refusing invalid ones and duplicate names
// with ErrInvalidDefinition.
func (r *Registry) Register(d Definition) error {
	if d == nil {
		return fmt.Errorf("%w: nil definition", ErrInvalidDefinition)
	}
	if err := d.validate(); err != nil {
		return err
	}
	name := d.Spec().Name
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.types[name]; dup {
		return fmt.Errorf("%w: type %q is already registered", ErrInvalidDefinition, name)
	}
	r.types[name] = d
	return nil
}

// MustRegister is Register that panics, for program start-up.
func (r *Registry) MustRegister(defs ...Definition) {
	for _, d := range defs {
		if err := r.Register(d); err != nil {
			panic(err)
		}
	}
}

// Lookup returns the definition of a type name.
func (r *Registry) Lookup(name string) (Definition, error) {
	r.mu.RLock()
	d, ok := r.types[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownType, name)
	}
	return d, nil
}

// Names lists the registered type names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.types))
	for n := range r.types {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
