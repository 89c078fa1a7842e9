package logread

import (
	"testing"
	"time"
)

// TestWatermarkStaysBelowTheOldestOutstandingEvent acknowledges events out
// of commit order: the watermark moves only past transactions whose every
// event, and every earlier transaction's, is done.
func TestWatermarkStaysBelowTheOldestOutstandingEvent(t *testing.T) {
	w := NewWatermark(100)
	a := w.Begin(time.Unix(1, 0))
	w.Add(a)
	w.Add(a)
	w.Commit(a, 200)
	b := w.Begin(time.Unix(2, 0))
	w.Add(b)
	w.Commit(b, 300)
	if got := w.Confirmed(); got != 100 {
		t.Fatalf("nothing done: confirmed %s, want 0/64", got)
	}
	w.Done(b) // the later transaction first
	if got := w.Confirmed(); got != 100 {
		t.Fatalf("only the later transaction done: confirmed %s, want 0/64", got)
	}
	w.Done(a)
	if got, want := w.Oldest(), time.Unix(1, 0); !got.Equal(want) {
		t.Fatalf("oldest %s, want %s", got, want)
	}
	w.Idle(1000) // a transaction is outstanding: ignored
	w.Done(a)
	if got := w.Confirmed(); got != 300 {
		t.Fatalf("all done: confirmed %s, want 0/12C", got)
	}
	if w.Outstanding() != 0 || !w.Oldest().IsZero() {
		t.Fatalf("outstanding %d, oldest %s after all done", w.Outstanding(), w.Oldest())
	}
	w.Idle(1000)
	if got := w.Confirmed(); got != 1000 {
		t.Fatalf("idle: confirmed %s, want 0/3E8", got)
	}
	open := w.Begin(time.Unix(3, 0)) // begun, not committed: holds the watermark
	w.Idle(2000)
	if got := w.Confirmed(); got != 1000 {
		t.Fatalf("a transaction open: confirmed %s, want 0/3E8", got)
	}
	w.Commit(open, 2500)
	if got := w.Confirmed(); got != 2500 {
		t.Fatalf("empty transaction committed: confirmed %s, want 0/9C4", got)
	}
}
