package config

import (
	"fmt"
	"regexp"
	"strings"
)

// substituter expands ${env:NAME}, ${env:NAME:-default} and ${secret:NAME}
// in configuration values.
// Substitution happens at load so that the engine only ever sees resolved
// values, and so that a missing variable is a validation problem with a line
// rather than a failure at the first connection attempt.
type substituter struct {
	lookupEnv func(string) (string, bool)
	// secrets is nil when ductus.yaml names no secrets file; an empty map when
	// it names one that holds nothing.
	secrets     map[string]string
	secretsFile string // as written in ductus.yaml, for messages
	noSecrets   bool   // true while reading the secrets path itself
}

var substName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// expansion is the result of expanding one scalar.
type expansion struct {
	value string
	// secret is true when a ${secret:} reference contributed to value: such a
	// value is never echoed in a problem message.
	secret bool
	errs   []string
}

// expand replaces every reference in raw. "$${" stands for a literal "${".
func (s *substituter) expand(raw string) expansion {
	if !strings.Contains(raw, "${") {
		return expansion{value: raw}
	}
	var out strings.Builder
	var x expansion
	for i := 0; i < len(raw); {
		if strings.HasPrefix(raw[i:], "$${") {
			out.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(raw[i:], "${") {
			out.WriteByte(raw[i])
			i++
			continue
		}
		end := strings.IndexByte(raw[i:], '}')
		if end < 0 {
			x.errs = append(x.errs, fmt.Sprintf("unterminated %q: want ${env:NAME} or ${secret:NAME} (write $${ for a literal ${)", raw[i:]))
			break
		}
		ref := raw[i+2 : i+end]
		i += end + 1
		scheme, name, _ := strings.Cut(ref, ":")
		// ${env:NAME:-default}: the default when NAME is unset (not for
		// secrets: a secret with a default in the project is no secret).
		name, def, hasDef := strings.Cut(name, ":-")
		if hasDef && scheme == "secret" {
			x.errs = append(x.errs, fmt.Sprintf("bad substitution \"${%s}\": a secret has no default (only ${env:NAME:-default} does)", ref))
			continue
		}
		if (scheme != "env" && scheme != "secret") || !substName.MatchString(name) {
			x.errs = append(x.errs, fmt.Sprintf("bad substitution \"${%s}\": want ${env:NAME} or ${secret:NAME} (write $${ for a literal ${)", ref))
			continue
		}
		switch scheme {
		case "env":
			v, ok := s.lookupEnv(name)
			if !ok && hasDef {
				v, ok = def, true
			}
			if !ok {
				x.errs = append(x.errs, fmt.Sprintf("environment variable %s is not set (used as ${env:%s})", name, name))
				continue
			}
			out.WriteString(v)
		case "secret":
			x.secret = true
			switch {
			case s.noSecrets:
				x.errs = append(x.errs, fmt.Sprintf("the secrets file's own path cannot use ${secret:%s}", name))
				continue
			case s.secrets == nil:
				x.errs = append(x.errs, fmt.Sprintf("${secret:%s} is used but ductus.yaml names no secrets file (set secrets: to a JSON file outside interfaces/)", name))
				continue
			}
			v, ok := s.secrets[name]
			if !ok {
				x.errs = append(x.errs, fmt.Sprintf("secret %s is not in the secrets file %s", name, s.secretsFile))
				continue
			}
			out.WriteString(v)
		}
	}
	x.value = out.String()
	return x
}
