package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Defaults for connections and the destinations that use them.
const (
	DefaultAckTimeout  = 30 * time.Second
	DefaultHTTPTimeout = 30 * time.Second
)

var connectionTypes = []string{string(ConnMLLP), string(ConnHTTP), string(ConnSFTP)}

// connection keys by type, for "this key belongs to another type" hints.
var connectionKeys = map[string][]string{
	"mllp": {"host", "port", "ack_timeout"},
	"http": {"url", "headers", "timeout"},
	"sftp": {"host", "port", "user", "password", "key_file", "known_hosts"},
}

// readResources reads resources.yaml.
func readResources(o *obj, dir string) Resources {
	res := Resources{Connections: map[string]*Connection{}}
	list, _ := o.entries("connections")
	for _, n := range list {
		if msg := checkName(n.name); msg != "" {
			o.d.problemAt(n.key, n.field, "%s", msg)
			continue
		}
		c := readConnection(o.d.object(n.field, n.key.Line, n.val), n.name, dir)
		if c != nil {
			res.Connections[n.name] = c
		}
	}
	o.finish(nil)
	return res
}

func readConnection(o *obj, name, dir string) *Connection {
	typ := ""
	if !o.has("type") {
		o.known["type"] = true
		o.missing("type")
	} else {
		typ = o.enum("type", "", connectionTypes...)
	}
	c := &Connection{Name: name, Type: ConnectionType(typ)}
	switch c.Type {
	case ConnMLLP:
		host, port := readHostPort(o, 0)
		c.MLLP = &MLLPConnection{Host: host, Port: port, AckTimeout: o.duration("ack_timeout", DefaultAckTimeout, time.Millisecond)}
	case ConnHTTP:
		u, _ := readURL(o, "url", true)
		c.HTTP = &HTTPConnection{URL: u, Headers: readHeaders(o, "headers"), Timeout: o.duration("timeout", DefaultHTTPTimeout, time.Millisecond)}
	case ConnSFTP:
		host, port := readHostPort(o, 22)
		s := &SFTPConnection{Host: host, Port: port}
		s.User, _ = o.reqStr("user")
		s.Password = o.str("password", "")
		s.KeyFile = readExistingFile(o, "key_file", dir, false)
		s.KnownHosts = readExistingFile(o, "known_hosts", dir, true)
		if s.Password == "" && s.KeyFile == "" && !o.has("password") && !o.has("key_file") {
			o.d.probs.addf(o.d.file, o.line, 0, o.path, "an sftp connection needs password or key_file")
		}
		if s.Password != "" && s.KeyFile != "" {
			o.problem("password", "set password or key_file, not both")
		}
		c.SFTP = s
	default:
		// The type is missing or wrong (reported): its other keys cannot be judged.
		return nil
	}
	o.finish(elsewhere(connectionKeys, typ, "connections"))
	return c
}

// elsewhere builds finish's hints: keys that are valid for types other than
// typ, so that "url" on an mllp destination says where it belongs.
func elsewhere(keysByType map[string][]string, typ, what string) map[string]string {
	own := map[string]bool{}
	for _, k := range keysByType[typ] {
		own[k] = true
	}
	types := map[string][]string{}
	for t, keys := range keysByType {
		if t == typ {
			continue
		}
		for _, k := range keys {
			if !own[k] {
				types[k] = append(types[k], t)
			}
		}
	}
	hints := map[string]string{}
	for k, ts := range types {
		sort.Strings(ts)
		hints[k] = fmt.Sprintf("it applies to %s %s, not %s", strings.Join(ts, " and "), what, typ)
	}
	return hints
}

// readHostPort reads host and port (port required when def is 0).
func readHostPort(o *obj, def int) (string, int) {
	host, ok := o.reqStr("host")
	if ok {
		if msg := checkHost(host); msg != "" {
			o.problem("host", "%s", msg)
		}
	}
	if def == 0 && !o.has("port") {
		o.known["port"] = true
		o.missing("port")
		return host, 0
	}
	return host, o.integer("port", def, 1, 65535)
}

// readURL reads an http(s) URL.
func readURL(o *obj, key string, required bool) (string, bool) {
	if !o.has(key) {
		o.known[key] = true
		if required {
			o.missing(key)
		}
		return "", false
	}
	t, ok := o.scalar(key)
	if !ok {
		return "", false
	}
	u, err := url.Parse(t.value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		o.problem(key, "want an http:// or https:// URL, got %s", t.shown)
		return "", false
	}
	return t.value, true
}

// readHeaders reads a mapping of HTTP header names to values.
func readHeaders(o *obj, key string) map[string]string {
	list, _ := o.entries(key)
	if len(list) == 0 {
		return nil
	}
	h := map[string]string{}
	for _, n := range list {
		if !validHeaderName(n.name) {
			o.d.problemAt(n.key, n.field, "not a valid HTTP header name")
			continue
		}
		t, ok := o.d.text(n.val, n.field)
		if !ok {
			continue
		}
		if strings.ContainsAny(t.value, "\r\n\x00") {
			o.d.problemAt(n.val, n.field, "a header value cannot contain line breaks")
			continue
		}
		h[n.name] = t.value
	}
	return h
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 127 || !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

// readExistingFile reads a path relative to the project that must name an
// existing file. It returns the absolute path.
func readExistingFile(o *obj, key, dir string, required bool) string {
	if !o.has(key) {
		o.known[key] = true
		if required {
			o.missing(key)
		}
		return ""
	}
	t, ok := o.scalar(key)
	if !ok || t.value == "" {
		return ""
	}
	p := resolvePath(dir, t.value)
	st, err := os.Stat(p)
	switch {
	case err != nil:
		o.problem(key, "file %s does not exist", t.shown)
	case st.IsDir():
		o.problem(key, "%s is a folder, want a file", t.shown)
	}
	return p
}

// resolvePath makes p absolute, relative to the project folder.
func resolvePath(dir, p string) string {
	p = filepath.FromSlash(p)
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}
