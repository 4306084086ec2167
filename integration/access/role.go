package access

import (
	"fmt"
	"slices"
	"strings"
)

// Role is what a principal may do, in increasing order.
type Role int

// The roles; the zero Role is nobody (an anonymous caller).
const (
	RoleNone Role = iota
	Viewer
	Operator
	Admin
)

var roleNames = []string{"", "viewer", "operator", "admin"}

// String is the role's name as the API and the CLI write it.
func (r Role) String() string {
	if r < 0 || int(r) >= len(roleNames) {
		return fmt.Sprintf("role(%d)", int(r))
	}
	return roleNames[r]
}

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	if i := slices.Index(roleNames, s); i > 0 {
		return Role(i), nil
	}
	return RoleNone, fmt.Errorf("access: unknown role %q (viewer, operator or admin)", s)
}

// Perm is a permission beyond a role.
type Perm string

// The permissions.
const (
	// Payloads lets a caller read message payloads and saved outputs.
	Payloads Perm = "payloads"
	// Audit lets a caller read the audit log.
	Audit Perm = "audit"
)

// AllPerms are the permissions, in the order they are written.
var AllPerms = []Perm{Payloads, Audit}

// Perms is a set of permissions.
type Perms []Perm

// Has reports whether p is in the set.
func (ps Perms) Has(p Perm) bool { return slices.Contains(ps, p) }

// String writes the set as stored: comma-separated, in AllPerms order.
func (ps Perms) String() string {
	var out []string
	for _, p := range AllPerms {
		if ps.Has(p) {
			out = append(out, string(p))
		}
	}
	return strings.Join(out, ",")
}

// ParsePerms reads permissions from names (each may itself be a
// comma-separated list); an unknown name is an error naming it.
func ParsePerms(names ...string) (Perms, error) {
	var out Perms
	for _, n := range names {
		for _, p := range strings.Split(n, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			if !slices.Contains(AllPerms, Perm(p)) {
				return nil, fmt.Errorf("access: unknown permission %q (payloads or audit)", p)
			}
			if !out.Has(Perm(p)) {
				out = append(out, Perm(p))
			}
		}
	}
	slices.SortFunc(out, func(a, b Perm) int { return slices.Index(AllPerms, a) - slices.Index(AllPerms, b) })
	return out, nil
}
