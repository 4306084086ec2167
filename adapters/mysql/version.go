package mysql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Flavors of server.
const (
	FlavorMySQL   = "MySQL"
	FlavorMariaDB = "MariaDB"
)

// ServerVersion is the server's flavor and version as SELECT VERSION()
// reports them.
type ServerVersion struct {
	Flavor              string // FlavorMySQL or FlavorMariaDB
	Major, Minor, Patch int
	Raw                 string
}

func (v ServerVersion) String() string {
	return fmt.Sprintf("%s %d.%d.%d", v.Flavor, v.Major, v.Minor, v.Patch)
}

// ParseVersion reads a VERSION() string: "8.0.36", "8.0.36-0ubuntu0.22.04.1",
// "10.11.19-MariaDB-0+deb12u1", or MariaDB's replication-compatible
// "5.5.5-10.11.2-MariaDB".
func ParseVersion(raw string) (ServerVersion, error) {
	v := ServerVersion{Flavor: FlavorMySQL, Raw: raw}
	s := strings.TrimSpace(raw)
	if strings.Contains(strings.ToLower(s), "mariadb") {
		v.Flavor = FlavorMariaDB
		s = strings.TrimPrefix(s, "5.5.5-")
	}
	if i := strings.IndexAny(s, "-+ "); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return v, fmt.Errorf("mysql: cannot read the server version %q", raw)
	}
	nums := []*int{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, fmt.Errorf("mysql: cannot read the server version %q", raw)
		}
		*nums[i] = n
	}
	return v, nil
}

// Supported reports whether the adapter runs on this server: MySQL 8.0.4+
// (FOR UPDATE SKIP LOCKED arrived in 8.0.1, JSON_TABLE in 8.0.4) or
// MariaDB 10.6+ (SKIP LOCKED, JSON_TABLE); both with window functions and
// READ COMMITTED consistent reads inside INSERT ... SELECT.
func (v ServerVersion) Supported() error {
	least := []int{8, 0, 4}
	if v.Flavor == FlavorMariaDB {
		least = []int{10, 6, 0}
	}
	if slices.Compare([]int{v.Major, v.Minor, v.Patch}, least) < 0 {
		return fmt.Errorf("mysql: the server is %s (%q), which is too old: Ductus needs MySQL 8.0.4 or later, or MariaDB 10.6 or later",
			v, v.Raw)
	}
	return nil
}
