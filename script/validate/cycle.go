package validate

import "slices"

// CycleThrough returns a dependency cycle through start, as the names from
// start back to start, or nil. deps lists what a name waits for. It is the
// one definition of a dependency cycle: `--check` applies it to the
// literal depends-on of the scripts, the server and `syndicate status` to
// the unmet dependencies at run time, and the dry run to the services
// still waiting, so that all of them name a cycle the same way.
func CycleThrough(start string, deps func(string) []string) []string {
	var path []string
	seen := map[string]bool{}
	var visit func(n string) []string
	visit = func(n string) []string {
		if n == start && len(path) > 0 {
			return append(slices.Clone(path), n)
		}
		if seen[n] {
			return nil
		}
		seen[n] = true
		path = append(path, n)
		next := slices.Clone(deps(n))
		slices.Sort(next)
		for _, d := range next {
			if c := visit(d); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		return nil
	}
	return visit(start)
}
