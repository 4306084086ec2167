// Package config loads and checks a ductus project folder: ductus.yaml (the
// engine), resources.yaml (named connections) and interfaces/<name>/
// interface.yaml with the interface's JavaScript files.
//
// A project is the unit an integration team keeps in version control and
// deploys, so its mistakes should surface on a laptop, not at three in the
// morning when the first message arrives. Load therefore reads everything,
// checks every value and every relation between files (routes, loops,
// listening ports, named connections), and reports all problems at once, each
// with the file, line and dotted key path it concerns:
//
//	interfaces/adt/interface.yaml:12: destinations.emr.retry.max: want a duration like 60s, got "soon"
//
// It never touches a database or the network, so `ductus validate` can run it
// anywhere.
//
// The YAML is read as yaml.Node trees rather than unmarshalled into structs,
// because nodes carry their lines and because reading key by key lets unknown
// keys be reported with a "did you mean" instead of being silently ignored.
// Values may contain ${env:NAME} and ${secret:NAME}; they are resolved at load
// (environment variables through LoadOptions.LookupEnv, secrets from the JSON
// file ductus.yaml names), so the engine only ever sees final values. A value
// that came from a secret is never echoed in a problem message.
//
// What Load returns is resolved: defaults applied, paths absolute, named
// connections copied into the destinations that use them, durations and
// sizes parsed. The engine builds its sources, destinations and lane actors
// from these structs and need not look at YAML again. REFERENCE.md in this
// folder lists every key, its type, default and meaning.
package config
