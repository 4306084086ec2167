package engine

import (
	"slices"
	"testing"
)

// The lanes of a paused destination are left out of the wake-up, unless
// TellTx's actors no longer line up with the lane messages (a duplicate
// was dropped), when every actor is woken as before.
func TestWakeable(t *testing.T) {
	for _, c := range []struct {
		name string
		pks  []int64
		held []bool
		want []int64
	}{
		{"none paused", []int64{1, 2, 3}, []bool{false, false, false}, []int64{1, 2, 3}},
		{"one paused", []int64{1, 2, 3}, []bool{false, true, false}, []int64{1, 3}},
		{"all paused", []int64{1, 2}, []bool{true, true}, []int64{}},
		{"an actor twice, once paused", []int64{1, 1, 2}, []bool{true, true, false}, []int64{2}},
		{"a duplicate dropped", []int64{1, 3}, []bool{false, true, false}, []int64{1, 3}},
		{"nothing queued", nil, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := wakeable(slices.Clone(c.pks), c.held)
			if !slices.Equal(got, c.want) {
				t.Fatalf("wakeable(%v, %v) = %v; want %v", c.pks, c.held, got, c.want)
			}
		})
	}
}
