package consistency_test

import (
	"errors"
	"testing"

	"github.com/eventrelay/eventrelay/consistency"
)

func TestTokenRoundTripAndMalformed(t *testing.T) {
	in := consistency.Token{AggregateType: "item", AggregateID: "a|b", AggregateVersion: 7}
	out, err := consistency.Parse(in.String())
	if err != nil || out != in {
		t.Fatalf("Parse(String()) = %+v, %v; want %+v", out, err, in)
	}
	all, err := consistency.ParseAll([]string{in.String() + ", " + in.String(), ""})
	if err != nil || len(all) != 2 {
		t.Fatalf("ParseAll = %v, %v; want two tokens", all, err)
	}
	for _, bad := range []string{"", "!!", "djF8MXxpdGVt", consistency.Token{AggregateType: "v", AggregateID: "x"}.String(),
		"djJ8MXxpdGVtfHg" /* v2|1|item|x */} {
		if _, err := consistency.Parse(bad); !errors.Is(err, consistency.ErrMalformed) {
			t.Errorf("Parse(%q) = %v; want ErrMalformed", bad, err)
		}
	}
}
