package mysql

// A batch of rows that get the same new values is one UPDATE by an IN
// list; rows that get different values need a CASE per column, which the
// server evaluates branch by branch for every row (500 rows: up to 250,000
// comparisons a column). A turn's completions (one result, one attempt)
// and a round-robin enqueue's actors (one count each) fall into a group or
// a few, so both group first and fall back to CASE past maxGroups.

// maxGroups is how many groups still go as one UPDATE each.
const maxGroups = 4

// group is the keys (of the rows to update) that share one value.
type group[K comparable] struct {
	key K
	ids []any
}

// grouped groups items 0..n-1 by the value each gets, in the order the
// values first appear; of returns an item's value and key.
func grouped[K comparable](n int, of func(i int) (K, any)) []group[K] {
	var out []group[K]
	at := map[K]int{}
	for i := 0; i < n; i++ {
		k, id := of(i)
		j, ok := at[k]
		if !ok {
			j = len(out)
			at[k] = j
			out = append(out, group[K]{key: k})
		}
		out[j].ids = append(out[j].ids, id)
	}
	return out
}
