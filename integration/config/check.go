package config

import (
	"fmt"
	"sort"
	"strings"
)

// Checks across files: they run once every file has been read, so that a
// problem in one interface does not hide a problem between two.

// checkRoutes checks every route's target and the route graph.
func checkRoutes(infos []*ifaceInfo, probs *problems) {
	byName := map[string]*ifaceInfo{}
	var names []string
	for _, ii := range infos {
		byName[ii.in.Name] = ii
		names = append(names, ii.in.Name)
	}
	edges := map[string][]string{}
	routeLine := map[[2]string]int{}
	for _, ii := range infos {
		for _, di := range ii.dests {
			r := di.dest.Route
			if r == nil {
				continue
			}
			field := "destinations." + di.dest.Name + ".interface"
			t, ok := byName[r.Interface]
			if !ok {
				probs.addf(ii.d.file, di.routeLine, 0, field, "no interface %q in interfaces/%s", r.Interface, didYouMean(r.Interface, names))
				continue
			}
			if t.in.Source.Type != SourceInternal && t.in.Source.Type != "" {
				probs.addf(ii.d.file, di.routeLine, 0, field, "interface %s has source type %s: a route needs a target with source: {type: internal}", r.Interface, t.in.Source.Type)
			}
			if t.in.Format != "" && di.dest.Format != "" && t.in.Format != di.dest.Format {
				probs.addf(ii.d.file, di.routeLine, 0, field, "this destination outputs %s but interface %s reads %s: set format: %s here, or change %s's format", di.dest.Format, r.Interface, t.in.Format, t.in.Format, r.Interface)
			}
			key := [2]string{ii.in.Name, r.Interface}
			if _, dup := routeLine[key]; !dup {
				edges[ii.in.Name] = append(edges[ii.in.Name], r.Interface)
				routeLine[key] = di.routeLine
			}
		}
	}
	for _, cycle := range findCycles(names, edges) {
		from := byName[cycle[0]]
		// Report at the route that leaves the cycle's first interface.
		var field string
		line := routeLine[[2]string{cycle[0], cycle[1]}]
		for _, di := range from.dests {
			if di.dest.Route != nil && di.dest.Route.Interface == cycle[1] {
				field = "destinations." + di.dest.Name + ".interface"
				break
			}
		}
		probs.addf(from.d.file, line, 0, field, "route loop: %s", strings.Join(cycle, " → "))
	}
}

// findCycles returns one cycle per strongly connected part of the route
// graph that has one, each starting and ending at its smallest name, so the
// report is the same however the files were read.
func findCycles(names []string, edges map[string][]string) [][]string {
	// Tarjan's algorithm.
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var comps [][]string
	next := 0
	var strong func(v string)
	strong = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range edges[v] {
			if _, seen := index[w]; !seen {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			comps = append(comps, comp)
		}
	}
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	for _, n := range sorted {
		if _, seen := index[n]; !seen {
			strong(n)
		}
	}
	var cycles [][]string
	for _, comp := range comps {
		in := map[string]bool{}
		for _, n := range comp {
			in[n] = true
		}
		sort.Strings(comp)
		start := comp[0]
		if len(comp) == 1 {
			self := false
			for _, w := range edges[start] {
				self = self || w == start
			}
			if self {
				cycles = append(cycles, []string{start, start})
			}
			continue
		}
		cycles = append(cycles, pathBack(start, edges, in))
	}
	sort.Slice(cycles, func(i, j int) bool { return cycles[i][0] < cycles[j][0] })
	return cycles
}

// pathBack finds a shortest path from start back to itself inside one
// strongly connected part (breadth first, neighbours in sorted order).
func pathBack(start string, edges map[string][]string, in map[string]bool) []string {
	prev := map[string]string{}
	queue := []string{start}
	visited := map[string]bool{}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		ns := append([]string(nil), edges[v]...)
		sort.Strings(ns)
		for _, w := range ns {
			if !in[w] {
				continue
			}
			if w == start {
				path := []string{start}
				for u := v; u != start; u = prev[u] {
					path = append(path, u)
				}
				// path is start, v, ..., reversed after the first element.
				rev := []string{start}
				for i := len(path) - 1; i >= 1; i-- {
					rev = append(rev, path[i])
				}
				return append(rev, start)
			}
			if !visited[w] {
				visited[w] = true
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []string{start, start}
}

// listener is one listening address, for the clash check.
type listener struct {
	addr  listenAddr
	text  string
	file  string
	line  int
	field string
}

// checkListeners reports every listener whose address another one has
// already taken (the first in file order keeps it).
func checkListeners(ls []listener, probs *problems) {
	for i, l := range ls {
		for _, prev := range ls[:i] {
			if l.addr.clashes(prev.addr) {
				probs.addf(l.file, l.line, 0, l.field, "listen address %s clashes with %s at %s:%d (%s)", l.text, prev.text, prev.file, prev.line, prev.field)
				break
			}
		}
	}
}

// checkFolders reports two file sources watching the same folder: each
// would take files the other expects.
func checkFolders(infos []*ifaceInfo, probs *problems) {
	seen := map[string]*ifaceInfo{}
	for _, ii := range infos {
		f := ii.in.Source.File
		if f == nil || f.Path == "" {
			continue
		}
		if prev, dup := seen[f.Path]; dup {
			probs.addf(ii.d.file, ii.src.folderLine, 0, "source.path", "interface %s already watches this folder (%s:%d)", prev.in.Name, prev.d.file, prev.src.folderLine)
			continue
		}
		seen[f.Path] = ii
	}
}

// routeWarnings warns about internal interfaces that no route fills.
func routeWarnings(infos []*ifaceInfo) []Problem {
	filled := map[string]bool{}
	for _, ii := range infos {
		for _, d := range ii.in.Destinations {
			if d.Route != nil {
				filled[d.Route.Interface] = true
			}
		}
	}
	var out []Problem
	for _, ii := range infos {
		if ii.in.Source.Type == SourceInternal && !filled[ii.in.Name] {
			out = append(out, Problem{File: ii.d.file, Field: "source.type", Line: ii.src.typeLine,
				Message: fmt.Sprintf("interface %s has source internal but no route sends to it", ii.in.Name)})
		}
	}
	return out
}
