package consistency_test

import (
	"errors"
	"testing"

	"github.com/eventrelay/eventrelay/consistency"
)

func TestTokenRoundTripAndMalformed(t *testing.T) {
	in := consistency.Token{AggregateType: "video", AggregateID: "a|b", Version: 7}
	out, err := consistency.Parse(in.String())
	if err != nil || out != in {
		t.Fatalf("Parse(String()) = %+v, %v; want %+v", out, err, in)
	}
	all, err := consistency.ParseAll([]string{in.String() + ", " + in.String(), ""})
	if err != nil || len(all) != 2 {
		t.Fatalf("ParseAll = %v, %v; want two tokens", all, err)
	}
	for _, bad := range []string{"", "!!", "djF8MXx2aWRlbw", consistency.Token{AggregateType: "v", AggregateID: "x"}.String(),
		"djJ8MXx2aWRlb3x4" /* v2|1|video|x */} {
		if _, err := consistency.Parse(bad); !errors.Is(err, consistency.ErrMalformed) {
			t.Errorf("Parse(%q) = %v; want ErrMalformed", bad, err)
		}
	}
}
