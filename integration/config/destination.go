package config

import (
	"regexp"
	"strings"
	"time"
)

// Defaults of destinations.
const (
	DefaultTransform    = "transform"
	DefaultRetryInitial = time.Second
	DefaultRetryMax     = 60 * time.Second
	DefaultMethod       = "POST"
)

var destinationTypes = []string{string(DestMLLP), string(DestHTTP), string(DestFile), string(DestInterface)}

var destinationKeys = map[string][]string{
	"mllp":      {"connection", "host", "port", "ack_timeout", "keep_alive", "connections"},
	"http":      {"connection", "url", "path", "method", "headers", "timeout"},
	"file":      {"path", "name"},
	"interface": {"interface"},
}

var jsIdentifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// destInfo is what the cross-checks need about a destination.
type destInfo struct {
	dest          *Destination
	transformLine int
	routeLine     int // the interface: value's line, for route checks
	warning       string
	warningLine   int
}

// readDestination reads one entry of destinations:. in is the interface
// being read (its Name and Format are set); conns are resources.yaml's.
func readDestination(o *obj, name string, in *Interface, conns map[string]*Connection, projectDir string, haveResources bool) *destInfo {
	d := &Destination{Name: name, Interface: in.Name, Line: o.line}
	info := &destInfo{dest: d, transformLine: o.keyLine("transform")}
	if !o.has("type") {
		o.known["type"] = true
		o.missing("type")
		return nil
	}
	d.Type = DestinationType(o.enum("type", "", destinationTypes...))

	d.Transform = o.str("transform", DefaultTransform)
	if !jsIdentifier.MatchString(d.Transform) {
		o.problem("transform", "want a JavaScript function name such as transform, got %q", d.Transform)
	}
	d.Format = Format(o.enum("format", string(in.Format), formatNames...))

	r := o.child("retry")
	d.Retry.Initial = r.duration("initial", DefaultRetryInitial, time.Millisecond)
	d.Retry.Max = r.duration("max", DefaultRetryMax, time.Millisecond)
	d.Retry.MaxAttempts = r.integer("max_attempts", 0, 0, 1_000_000)
	if d.Retry.Max < d.Retry.Initial {
		r.problem("max", "max (%s) must be at least initial (%s)", shortDuration(d.Retry.Max), shortDuration(d.Retry.Initial))
	}
	r.finish(nil)

	if o.has("rate_limit") {
		rl := o.child("rate_limit")
		d.RateLimit = &RateLimit{}
		if !rl.has("per_second") {
			rl.known["per_second"] = true
			rl.missing("per_second")
		}
		d.RateLimit.PerSecond = rl.positive("per_second", 1)
		d.RateLimit.Burst = rl.integer("burst", 1, 1, 1_000_000)
		rl.finish(nil)
	} else {
		o.known["rate_limit"] = true
	}
	d.SaveOutput = o.boolean("save_output", false)
	d.Charset = readDestinationCharset(o, d)

	switch d.Type {
	case DestMLLP:
		d.MLLP = readMLLPDestination(o, conns, haveResources)
		if d.Format != FormatHL7v2 && in.Format != "" {
			if o.has("format") {
				o.problem("format", "an mllp destination sends HL7 v2: want format hl7v2, got %q", d.Format)
			} else {
				o.d.probs.addf(o.d.file, o.line, 0, o.field("format"), "an mllp destination sends HL7 v2, but this interface reads %s: set format: hl7v2 and return HL7 from the transform", in.Format)
			}
		}
	case DestHTTP:
		d.HTTP = readHTTPDestination(o, conns, haveResources)
	case DestFile:
		fd := &FileDestination{}
		if p, ok := o.reqStr("path"); ok {
			fd.Path = resolvePath(projectDir, p)
		}
		tmpl := o.str("name", DefaultFileName)
		f, msg, warn := compileFileName(fd.Path, tmpl, d.Format.Ext(), in.Name, name)
		if msg != "" {
			o.problem("name", "%s", msg)
		} else {
			fd = f
		}
		// A schedule stores one message per run, so a name without {{.ID}}
		// is one file per period on purpose (a daily census): no warning.
		if warn != "" && in.Source.Type != SourceSchedule {
			info.warning, info.warningLine = warn, o.keyLine("name")
		}
		d.File = fd
	case DestInterface:
		target, ok := o.reqStr("interface")
		if ok {
			d.Route = &Route{Interface: target}
			if e, ok := o.get("interface"); ok {
				info.routeLine = e.val.Line
			}
		}
	default:
		return nil
	}
	o.finish(elsewhere(destinationKeys, string(d.Type), "destinations"))
	return info
}

// connection looks up a connection name and checks its type.
func connection(o *obj, conns map[string]*Connection, want ConnectionType, what string, haveResources bool) *Connection {
	t, ok := o.scalar("connection")
	if !ok {
		return nil
	}
	c, found := conns[t.value]
	if !found {
		if !haveResources {
			o.problem("connection", "no connection %q: the project has no resources.yaml", t.value)
			return nil
		}
		var names []string
		for n := range conns {
			names = append(names, n)
		}
		o.problem("connection", "no connection %q in resources.yaml%s", t.value, didYouMean(t.value, names))
		return nil
	}
	if c.Type != want {
		o.problem("connection", "connection %q is of type %s; %s needs a connection of type %s", t.value, c.Type, what, want)
		return nil
	}
	return c
}

func readMLLPDestination(o *obj, conns map[string]*Connection, haveResources bool) *MLLPDestination {
	m := &MLLPDestination{AckTimeout: DefaultAckTimeout}
	if o.has("connection") {
		if o.has("host") || o.has("port") {
			o.problem("connection", "set connection or host and port, not both")
		}
		if c := connection(o, conns, ConnMLLP, "an mllp destination", haveResources); c != nil {
			m.Connection = c.Name
			m.Host, m.Port, m.AckTimeout = c.MLLP.Host, c.MLLP.Port, c.MLLP.AckTimeout
		}
		o.known["host"], o.known["port"] = true, true
	} else {
		o.known["connection"] = true
		m.Host, m.Port = readHostPort(o, 0)
	}
	m.AckTimeout = o.duration("ack_timeout", m.AckTimeout, time.Millisecond)
	m.KeepAlive = o.boolean("keep_alive", true)
	m.Connections = o.integer("connections", 1, 1, MaxMLLPConnections)
	return m
}

func readHTTPDestination(o *obj, conns map[string]*Connection, haveResources bool) *HTTPDestination {
	h := &HTTPDestination{Timeout: DefaultHTTPTimeout}
	headers := map[string]string{}
	switch {
	case o.has("connection"):
		if o.has("url") {
			o.problem("url", "set connection (and path) or url, not both")
		}
		o.known["url"] = true
		if c := connection(o, conns, ConnHTTP, "an http destination", haveResources); c != nil {
			h.Connection = c.Name
			h.Timeout = c.HTTP.Timeout
			for k, v := range c.HTTP.Headers {
				headers[k] = v
			}
			h.URL = joinURLPath(c.HTTP.URL, o.str("path", ""))
		}
		if p := o.str("path", ""); p != "" && !strings.HasPrefix(p, "/") {
			o.problem("path", "want a path starting with /, got %q", p)
		}
	case o.has("url"):
		o.known["connection"] = true
		h.URL, _ = readURL(o, "url", true)
		if o.has("path") {
			o.known["path"] = true
			o.problem("path", "path is added to a connection's URL; with url, write the whole URL")
		}
	default:
		o.known["connection"], o.known["path"], o.known["url"] = true, true, true
		o.d.probs.addf(o.d.file, o.line, 0, o.field("url"), "an http destination needs url or connection")
	}
	// Header names are case-insensitive: the destination's replace the
	// connection's whatever their case.
	for k, v := range readHeaders(o, "headers") {
		for ck := range headers {
			if strings.EqualFold(ck, k) {
				delete(headers, ck)
			}
		}
		headers[k] = v
	}
	if len(headers) > 0 {
		h.Headers = headers
	}
	h.Method = o.enum("method", DefaultMethod, "POST", "PUT", "PATCH")
	h.Timeout = o.duration("timeout", h.Timeout, time.Millisecond)
	return h
}

func joinURLPath(base, p string) string {
	if p == "" {
		return base
	}
	return strings.TrimSuffix(base, "/") + p
}
