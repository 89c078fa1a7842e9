package bench

import (
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseCPUSplit(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skipf("SKIPPED: this machine has %d CPU; a split needs 2", runtime.NumCPU())
	}
	sp, err := ParseCPUSplit("db=0,app=1")
	if err != nil || !slices.Equal(sp.DB, []int{0}) || !slices.Equal(sp.App, []int{1}) {
		t.Fatalf(`ParseCPUSplit("db=0,app=1") = %+v, %v`, sp, err)
	}
	if sp, err := ParseCPUSplit("db=0,app=1,relay=1"); err != nil || !slices.Equal(sp.Relay, []int{1}) {
		t.Errorf(`ParseCPUSplit("db=0,app=1,relay=1") = %+v, %v; want relay [1] (it may share the bench's CPUs)`, sp, err)
	}
	if cpus, err := parseCPUList("0-2+5+1"); err != nil || !slices.Equal(cpus, []int{0, 1, 2, 5}) {
		t.Errorf(`parseCPUList("0-2+5+1") = %v, %v; want [0 1 2 5]`, cpus, err)
	}
	for _, bad := range []string{"", "db=0", "app=1", "db=0,app=0", "db=0,app=x", "db=1-0,app=0", "db=0,app=1,web=2",
		"db=0;app=1", "db=0,app=4096", "db=0,app=-1", "db=0,app=1,relay=0", "db=0,relay=1"} {
		if sp, err := ParseCPUSplit(bad); err == nil {
			t.Errorf("ParseCPUSplit(%q) = %+v, no error", bad, sp)
		}
	}
}

// TestPinAndRestore pins a stand-in "postmaster" (a sleep with a child of
// its own) and this process, checks both ended up on their sets, and that
// restore gives the CPUs back.
func TestPinAndRestore(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skipf("SKIPPED: this machine has %d CPU; a split needs 2", runtime.NumCPU())
	}
	parent := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := parent.Start(); err != nil {
		t.Fatalf("starting a stand-in server: %v", err)
	}
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
	pm := parent.Process.Pid
	var kids []int
	for range 100 {
		if kids = childrenOf(pm); len(kids) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(kids) == 0 {
		t.Fatal("the stand-in server has no child")
	}
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	sp := CPUSplit{DB: []int{0}, App: []int{1}}
	was, err := sp.pin(pm)
	if err != nil {
		was.restore(pm)
		t.Fatalf("pin: %v", err)
	}
	for _, c := range []struct {
		id   int
		want []int
	}{{pm, sp.DB}, {kids[0], sp.DB}, {0, sp.App}} {
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(c.id, &got); err != nil || got != cpuSet(c.want) {
			t.Errorf("CPUs of %d after pin: %v (%v), want %v", c.id, got, err, c.want)
		}
	}
	was.restore(pm)
	for _, id := range []int{pm, kids[0], 0} {
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(id, &got); err != nil || got != before {
			t.Errorf("CPUs of %d after restore: %v (%v), want %v", id, got, err, before)
		}
	}
}

// TestPinDaemon moves a running process's threads to the relay's CPUs, and
// does nothing without a relay set.
func TestPinDaemon(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skipf("SKIPPED: this machine has %d CPU; a split needs 2", runtime.NumCPU())
	}
	d := exec.Command("sleep", "30")
	if err := d.Start(); err != nil {
		t.Fatalf("starting a stand-in daemon: %v", err)
	}
	defer func() { _ = d.Process.Kill(); _ = d.Wait() }()
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(d.Process.Pid, &before); err != nil {
		t.Fatal(err)
	}
	var none *CPUSplit
	for _, sp := range []*CPUSplit{none, {DB: []int{0}, App: []int{1}}} {
		if err := sp.pinDaemon(d.Process.Pid); err != nil {
			t.Fatalf("pinDaemon without a relay set (%+v): %v", sp, err)
		}
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(d.Process.Pid, &got); err != nil || got != before {
			t.Errorf("pinDaemon without a relay set (%+v) changed the CPUs: %v (%v), want %v", sp, got, err, before)
		}
	}
	sp := &CPUSplit{DB: []int{0}, App: []int{1}, Relay: []int{1}}
	if err := sp.pinDaemon(d.Process.Pid); err != nil {
		t.Fatalf("pinDaemon: %v", err)
	}
	var got unix.CPUSet
	if err := unix.SchedGetaffinity(d.Process.Pid, &got); err != nil || got != cpuSet(sp.Relay) {
		t.Errorf("CPUs of the daemon after pinDaemon: %v (%v), want %v", got, err, sp.Relay)
	}
}
