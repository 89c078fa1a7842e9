package outbox

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventrelay/eventrelay/contract"
)

// W3C Trace Context (https://www.w3.org/TR/trace-context/) limits on
// tracestate that the writer applies when it truncates one.
const (
	// tracestateMaxMembers is the most list-members a tracestate carries.
	tracestateMaxMembers = 32
	// tracestateLargeMember: when a tracestate must be truncated, members
	// longer than this go first.
	tracestateLargeMember = 128
)

const attrTracestate = "tracestate"

// putTraceContext sets the trace context of an event's headers h: the
// span context of ctx when it has a valid one (replacing any the event
// carries), else the traceparent and tracestate in h. It never fails: the
// caller's trace context must not decide whether a write succeeds, so it
// is made to fit by the W3C rules instead. An invalid traceparent is
// dropped with its tracestate (a tracestate without one means nothing); a
// valid one is stored in version 00's form; the tracestate is cut by
// fitTracestate, and dropped when what is left does not parse.
func putTraceContext(ctx context.Context, h map[string]string) {
	sc := trace.SpanContextFromContext(ctx)
	state := ""
	if sc.IsValid() {
		state = sc.TraceState().String()
	} else {
		state = h[attrTracestate]
		parent := propagation.MapCarrier{contract.AttrTraceparent: h[contract.AttrTraceparent]}
		sc = trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), parent))
	}
	delete(h, contract.AttrTraceparent)
	delete(h, attrTracestate)
	if !sc.IsValid() {
		return
	}
	sc = sc.WithTraceState(trace.TraceState{})
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), propagation.MapCarrier(h))
	if state = fitTracestate(state, contract.MaxAttributeValueBytes); state != "" {
		h[attrTracestate] = state
	}
}

// fitTracestate returns the W3C tracestate s cut to at most limit bytes
// and tracestateMaxMembers list-members, never inside a member: members
// beyond the 32nd go, then, while it is too long, the rightmost member
// over tracestateLargeMember characters, then the rightmost member. What
// is left must parse as a tracestate ("" otherwise).
func fitTracestate(s string, limit int) string {
	var list []string
	for m := range strings.SplitSeq(s, ",") {
		if m = strings.Trim(m, " \t"); m != "" { // empty members and optional white space are allowed
			list = append(list, m)
		}
	}
	list = list[:min(len(list), tracestateMaxMembers)]
	size := len(list) - 1 // the commas
	for _, m := range list {
		size += len(m)
	}
	for len(list) > 0 && size > limit {
		drop := len(list) - 1
		for i := len(list) - 1; i >= 0; i-- {
			if len(list[i]) > tracestateLargeMember {
				drop = i
				break
			}
		}
		size -= len(list[drop]) + 1
		list = append(list[:drop], list[drop+1:]...)
	}
	out := strings.Join(list, ",")
	if _, err := trace.ParseTraceState(out); err != nil {
		return ""
	}
	return out
}
