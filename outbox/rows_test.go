package outbox

import (
	"testing"

	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

func TestRowsFitSplitsByBytes(t *testing.T) {
	sized := func(sizes ...int) rows {
		rs := make(rows, len(sizes))
		for i, n := range sizes {
			rs[i] = outboxdb.InsertOutboxEventParams{Payload: make([]byte, n-2), Headers: []byte("{}")}
		}
		return rs
	}
	cases := []struct {
		sizes []int
		want  int
	}{
		{[]int{400, 600, 2}, 2},   // 1000 fits, 1002 does not
		{[]int{1500, 10}, 1},      // an oversize row goes alone
		{[]int{300, 300, 300}, 3}, // all of them
		{[]int{10}, 1},
	}
	for _, c := range cases {
		if got := sized(c.sizes...).fit(1000); got != c.want {
			t.Errorf("fit(%v, 1000) = %d, want %d", c.sizes, got, c.want)
		}
	}
}
