package actor

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
)

// Handler is one message or query of an actor type with state S. Build it
// with [Message] or [Query], which decode the arguments into the handler's
// own type.
type Handler[S any] struct {
	query bool
	args  reflect.Type // A, checked at registration
	check func(raw []byte) error
	call  func(c *Context, s *S, raw []byte) (any, error)
}

// Message makes a handler that may change state. Arguments arrive decoded
// into A; the returned R is the message's durable result (what Ask returns).
func Message[S, A, R any](fn func(c *Context, s *S, args A) (R, error)) Handler[S] {
	return Handler[S]{
		args:  reflect.TypeFor[A](),
		check: checkArgs[A],
		call: func(c *Context, s *S, raw []byte) (any, error) {
			a, err := Decode[A]("arguments", raw)
			if err != nil {
				return nil, err
			}
			return fn(c, s, a)
		},
	}
}

// Query makes a read-only handler. It runs as a durable mailbox turn like a
// message (so it sees every earlier message applied), but a query whose turn
// changes the serialized state fails with ErrQueryMutated and changes
// nothing. It may not stage effects, sends or reminders.
func Query[S, A, R any](fn func(c *Context, s *S, args A) (R, error)) Handler[S] {
	h := Message(fn)
	h.query = true
	return h
}

// checkArgs decodes raw as the handler will, first refusing keys that
// differ only in case where they would land in the same struct field.
func checkArgs[A any](raw []byte) error {
	if err := checkFoldedKeys("arguments", raw, reflect.TypeFor[A]()); err != nil {
		return err
	}
	_, err := Decode[A]("arguments", raw)
	return err
}

// Migration upgrades stored state of version From to version To (= From+1).
type Migration struct {
	From, To int
	Fn       func(state json.RawMessage) (json.RawMessage, error)
}

// MigrateObject adapts a function over a JSON object (the usual shape of
// state) into a migration step function.
func MigrateObject(fn func(m map[string]any) error) func(json.RawMessage) (json.RawMessage, error) {
	return func(raw json.RawMessage) (json.RawMessage, error) {
		m := map[string]any{}
		if len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, fmt.Errorf("state is not a JSON object: %w", err)
			}
		}
		if err := fn(m); err != nil {
			return nil, err
		}
		return json.Marshal(m)
	}
}

// Type defines an actor type whose state is the Go value S (stored as JSON).
type Type[S any] struct {
	// Name is the stable, persisted type name: 1-64 characters of letters,
	// digits and . _ - : starting with a letter. Never rename a type that
	// has stored actors.
	Name string
	// StateVersion is the current state schema version (default 1).
	StateVersion int
	// Initial returns a new actor's state; nil means S's zero value.
	Initial func() S
	// Messages maps message and query names to handlers.
	Messages map[string]Handler[S]
	// Migrations upgrade stored state one version at a time.
	Migrations []Migration
	// Observables are named projections of state. A commit whose turn
	// changed an observable's JSON value writes a broadcast row.
	Observables map[string]func(s *S) any
	// OnActivate runs after state load and migration, before the first
	// message. Its state changes are persisted with the next successful
	// commit. An error fails the activation (the message is retried).
	OnActivate func(c *Context, s *S) error
	// OnDeactivate runs only on graceful local deactivation. It is best
	// effort: its state changes are not persisted and it may not run at all
	// after a crash.
	OnDeactivate func(c *Context, s *S)
}

// Spec describes a registered type for the runtime.
type Spec struct {
	Name         string
	StateVersion int
	Messages     map[string]bool // name -> is a query
	Observables  []string        // sorted
}

// Definition is the type-erased actor type the [Registry] holds; *Type[S]
// implements it. The runtime dispatches only through it.
type Definition interface {
	Spec() Spec
	// CheckArguments decodes raw into the message's argument type, so a
	// client refuses bad arguments before anything is written.
	CheckArguments(message string, raw []byte) error
	// Load migrates stored state (nil for a new actor) and returns an
	// activation. It does not run OnActivate.
	Load(state []byte, version int) (Activation, error)
	validate() error
}

// Activation is one in-memory incarnation of an actor, used by one worker
// goroutine at a time.
type Activation interface {
	// Activate runs the OnActivate hook.
	Activate(c *Context) error
	// Deactivate runs the OnDeactivate hook.
	Deactivate(c *Context)
	// Handle runs one message or query and returns its result value.
	Handle(c *Context, message string, args []byte) (any, error)
	// State returns the current state for encoding.
	State() any
	// Reset replaces the in-memory state with the given JSON (restoring
	// the pre-turn state after a failure).
	Reset(state []byte) error
	// Observe evaluates every observable.
	Observe() map[string]any
}

var typeNamePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._:-]{0,63}$`)

var messageNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9._:-]{0,127}$`)

// Spec implements Definition.
func (t *Type[S]) Spec() Spec {
	sp := Spec{Name: t.Name, StateVersion: t.version(), Messages: map[string]bool{}}
	for name, h := range t.Messages {
		sp.Messages[name] = h.query
	}
	for name := range t.Observables {
		sp.Observables = append(sp.Observables, name)
	}
	sort.Strings(sp.Observables)
	return sp
}

func (t *Type[S]) version() int {
	if t.StateVersion == 0 {
		return 1
	}
	return t.StateVersion
}

func (t *Type[S]) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: type %q: %s", ErrInvalidDefinition, t.Name, fmt.Sprintf(format, a...))
	}
	if !typeNamePattern.MatchString(t.Name) {
		return bad("the name must be 1-64 letters, digits or . _ - : starting with a letter")
	}
	if t.StateVersion < 0 {
		return bad("state version %d is negative", t.StateVersion)
	}
	if len(t.Messages) == 0 {
		return bad("it has no messages")
	}
	seen := map[reflect.Type]bool{}
	if err := checkTypeNames(reflect.TypeFor[S](), seen); err != nil {
		return bad("state: %v", err)
	}
	for _, name := range sortedKeys(t.Messages) {
		h := t.Messages[name]
		if !messageNamePattern.MatchString(name) {
			return bad("message name %q must be 1-128 letters, digits or . _ - :", name)
		}
		if h.call == nil {
			return bad("message %q has no handler (build it with actor.Message or actor.Query)", name)
		}
		if h.args == nil {
			continue
		}
		if err := checkTypeNames(h.args, seen); err != nil {
			return bad("message %q arguments: %v", name, err)
		}
	}
	for name, fn := range t.Observables {
		if name == "" || fn == nil {
			return bad("observable %q needs a name and a function", name)
		}
	}
	return t.validateMigrations(bad)
}

// validateMigrations refuses steps that are malformed, duplicated or leave
// a gap: from the lowest step's version up to the current one every step
// must exist, because a dormant actor's state may be at any of them. (A
// type with no steps starts at its current version.)
func (t *Type[S]) validateMigrations(bad func(string, ...any) error) error {
	steps := map[int]bool{}
	lowest := t.version()
	for _, m := range t.Migrations {
		switch {
		case m.Fn == nil:
			return bad("migration %d->%d has no function", m.From, m.To)
		case m.To != m.From+1:
			return bad("migration %d->%d must go up exactly one version (a step backwards would be a cycle)", m.From, m.To)
		case m.From < 1 || m.To > t.version():
			return bad("migration %d->%d is outside versions 1..%d", m.From, m.To, t.version())
		case steps[m.From]:
			return bad("two migrations start at version %d", m.From)
		}
		steps[m.From] = true
		lowest = min(lowest, m.From)
	}
	for v := lowest; v < t.version(); v++ {
		if !steps[v] {
			return bad("no migration step from version %d to %d (state stored at version %d could not be loaded)", v, v+1, lowest)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CheckArguments implements Definition.
func (t *Type[S]) CheckArguments(message string, raw []byte) error {
	h, ok := t.Messages[message]
	if !ok {
		return fmt.Errorf("%w: type %q has no message %q", ErrUnknownMessage, t.Name, message)
	}
	return h.check(raw)
}

// Load implements Definition.
func (t *Type[S]) Load(state []byte, version int) (Activation, error) {
	a := &activation[S]{t: t}
	if len(state) == 0 || string(state) == "null" || version == 0 {
		if t.Initial != nil {
			a.state = t.Initial()
		}
		return a, nil
	}
	if version > t.version() {
		return nil, fmt.Errorf("%w: type %q stored version %d, code version %d", ErrNewerStateVersion, t.Name, version, t.version())
	}
	migrated, err := t.migrate(state, version)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(migrated, &a.state); err != nil {
		return nil, fmt.Errorf("%w: type %q: stored state does not decode: %v", ErrMigration, t.Name, err)
	}
	return a, nil
}

func (t *Type[S]) migrate(state []byte, from int) ([]byte, error) {
	steps := make(map[int]Migration, len(t.Migrations))
	for _, m := range t.Migrations {
		steps[m.From] = m
	}
	for v := from; v < t.version(); v++ {
		m, ok := steps[v]
		if !ok {
			return nil, fmt.Errorf("%w: type %q has no migration step from version %d to %d", ErrMigration, t.Name, v, v+1)
		}
		out, err := m.Fn(state)
		if err != nil {
			return nil, fmt.Errorf("%w: type %q step %d->%d: %v", ErrMigration, t.Name, v, v+1, err)
		}
		if err := Check("migrated state", out, 0); err != nil {
			return nil, fmt.Errorf("%w: type %q step %d->%d produced %v", ErrMigration, t.Name, v, v+1, err)
		}
		state = out
	}
	return state, nil
}

type activation[S any] struct {
	t     *Type[S]
	state S
}

func (a *activation[S]) Activate(c *Context) error {
	if a.t.OnActivate == nil {
		return nil
	}
	return a.t.OnActivate(c, &a.state)
}

func (a *activation[S]) Deactivate(c *Context) {
	if a.t.OnDeactivate != nil {
		a.t.OnDeactivate(c, &a.state)
	}
}

func (a *activation[S]) Handle(c *Context, message string, args []byte) (any, error) {
	h, ok := a.t.Messages[message]
	if !ok {
		return nil, fmt.Errorf("%w: type %q has no message %q", ErrUnknownMessage, a.t.Name, message)
	}
	return h.call(c, &a.state, args)
}

func (a *activation[S]) State() any { return &a.state }

func (a *activation[S]) Reset(state []byte) error {
	var s S
	if len(state) > 0 && string(state) != "null" {
		if err := json.Unmarshal(state, &s); err != nil {
			return err
		}
	} else if a.t.Initial != nil {
		s = a.t.Initial()
	}
	a.state = s
	return nil
}

func (a *activation[S]) Observe() map[string]any {
	if len(a.t.Observables) == 0 {
		return nil
	}
	out := make(map[string]any, len(a.t.Observables))
	for name, fn := range a.t.Observables {
		out[name] = fn(&a.state)
	}
	return out
}
