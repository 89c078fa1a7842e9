package bench

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CPUSplit gives the Postgres server and the rest of the cost scenario
// (the bench with its writers and Pub/Sub double, the publisher, the
// burner) disjoint sets of CPUs, the way production separates the
// database's node from the application's: what the relay then costs the
// writers is its work in the database, not a neighbour's on the database's
// CPUs. Parsed from "db=<cpus>,app=<cpus>" (ParseCPUSplit).
type CPUSplit struct {
	DB, App []int
}

// ParseCPUSplit reads "db=0-1,app=2-3": CPU numbers and ranges joined by
// "+" within a set (e.g. "db=0+2,app=1+3"), both sets non-empty and
// disjoint, every CPU one this process may run on.
func ParseCPUSplit(s string) (*CPUSplit, error) {
	var sp CPUSplit
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("-cost-cpus %q: want db=<cpus>,app=<cpus> (e.g. db=0-1,app=2-3)", s)
		}
		cpus, err := parseCPUList(v)
		if err != nil {
			return nil, fmt.Errorf("-cost-cpus %q: %s: %w", s, k, err)
		}
		switch k {
		case "db":
			sp.DB = cpus
		case "app":
			sp.App = cpus
		default:
			return nil, fmt.Errorf("-cost-cpus %q: unknown set %q (db, app)", s, k)
		}
	}
	if len(sp.DB) == 0 || len(sp.App) == 0 {
		return nil, fmt.Errorf("-cost-cpus %q: both db and app need CPUs", s)
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return nil, fmt.Errorf("-cost-cpus: reading this process's CPUs: %w", err)
	}
	for _, c := range append(slices.Clone(sp.DB), sp.App...) {
		if slices.Contains(sp.DB, c) && slices.Contains(sp.App, c) {
			return nil, fmt.Errorf("-cost-cpus %q: CPU %d is in both sets", s, c)
		}
		if !allowed.IsSet(c) {
			return nil, fmt.Errorf("-cost-cpus %q: CPU %d is not one this process may use (%d usable)", s, c, allowed.Count())
		}
	}
	return &sp, nil
}

// maxCPUs is how many CPUs a unix.CPUSet holds (glibc's CPU_SETSIZE).
const maxCPUs = 1024

// parseCPUList reads "0-1+3".
func parseCPUList(v string) ([]int, error) {
	var cpus []int
	for _, r := range strings.Split(v, "+") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b >= maxCPUs {
			return nil, fmt.Errorf("%q is not a CPU or a range of CPUs", r)
		}
		for c := a; c <= b; c++ {
			if !slices.Contains(cpus, c) {
				cpus = append(cpus, c)
			}
		}
	}
	return cpus, nil
}

func (sp CPUSplit) String() string {
	return fmt.Sprintf("Postgres on CPUs %v, the bench and its daemons on CPUs %v", sp.DB, sp.App)
}

func cpuSet(cpus []int) unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return set
}

// pinnedAffinity is what pin changed: each thread or process and the CPUs
// it had before.
type pinnedAffinity map[int]unix.CPUSet

// pin sets the CPUs of every thread of this process to sp.App and of the
// Postgres server (the postmaster and its children; backends forked later
// inherit the postmaster's) to sp.DB. New threads of this process and the
// daemons it starts inherit sp.App. Undo with restore.
func (sp CPUSplit) pin(postmaster int) (pinnedAffinity, error) {
	was := pinnedAffinity{}
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return was, fmt.Errorf("listing this process's threads: %w", err)
	}
	for _, e := range tids {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			if err := was.set(tid, cpuSet(sp.App)); err != nil {
				return was, err
			}
		}
	}
	for _, pid := range append([]int{postmaster}, childrenOf(postmaster)...) {
		if err := was.set(pid, cpuSet(sp.DB)); err != nil {
			return was, fmt.Errorf("pinning the Postgres server (it must run on this machine, as a user this one may change): %w", err)
		}
	}
	return was, nil
}

// set remembers id's CPUs (the first time) and sets them to cpus. A thread
// or process that has ended meanwhile is passed over.
func (p pinnedAffinity) set(id int, cpus unix.CPUSet) error {
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(id, &old); err != nil {
		if err == unix.ESRCH {
			return nil
		}
		return fmt.Errorf("reading the CPUs of %d: %w", id, err)
	}
	if _, seen := p[id]; !seen {
		p[id] = old
	}
	if err := unix.SchedSetaffinity(id, &cpus); err != nil && err != unix.ESRCH {
		return fmt.Errorf("setting the CPUs of %d: %w", id, err)
	}
	return nil
}

// restore gives every thread and process pin changed its CPUs back, and
// the Postgres backends forked since (which inherited sp.DB) the
// postmaster's. The bench's threads started since get its first thread's.
func (p pinnedAffinity) restore(postmaster int) {
	self := os.Getpid()
	for id, cpus := range p {
		_ = unix.SchedSetaffinity(id, &cpus) // ended since: nothing to restore
	}
	if cpus, ok := p[postmaster]; ok {
		for _, pid := range childrenOf(postmaster) {
			_ = unix.SchedSetaffinity(pid, &cpus)
		}
	}
	if cpus, ok := p[self]; ok {
		tids, _ := os.ReadDir("/proc/self/task")
		for _, e := range tids {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				_ = unix.SchedSetaffinity(tid, &cpus)
			}
		}
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var kids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(child); ok && st.ppid == pid {
			kids = append(kids, child)
		}
	}
	return kids
}
