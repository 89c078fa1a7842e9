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
// CPUs. Relay, when set, takes the scenario's daemons (publisher, burner)
// off App too, as separate pods would: then the writers' client side does
// not share CPUs with the relay either. Parsed from
// "db=<cpus>,app=<cpus>[,relay=<cpus>]" (ParseCPUSplit).
type CPUSplit struct {
	DB, App, Relay []int
}

// ParseCPUSplit reads "db=0-1,app=2,relay=3": CPU numbers and ranges
// joined by "+" within a set (e.g. "db=0+2,app=1+3"); db and app
// non-empty, relay optional, no CPU of db in another set, every CPU one
// this process may run on.
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
		case "relay":
			sp.Relay = cpus
		default:
			return nil, fmt.Errorf("-cost-cpus %q: unknown set %q (db, app, relay)", s, k)
		}
	}
	if len(sp.DB) == 0 || len(sp.App) == 0 {
		return nil, fmt.Errorf("-cost-cpus %q: both db and app need CPUs", s)
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return nil, fmt.Errorf("-cost-cpus: reading this process's CPUs: %w", err)
	}
	for _, c := range slices.Concat(sp.DB, sp.App, sp.Relay) {
		if slices.Contains(sp.DB, c) && (slices.Contains(sp.App, c) || slices.Contains(sp.Relay, c)) {
			return nil, fmt.Errorf("-cost-cpus %q: CPU %d is the database's and in another set", s, c)
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
	if len(sp.Relay) == 0 {
		return fmt.Sprintf("Postgres on CPUs %v, the bench and its daemons on CPUs %v", sp.DB, sp.App)
	}
	return fmt.Sprintf("Postgres on CPUs %v, the bench (writers, Pub/Sub double) on CPUs %v, its daemons (publisher, burner) on CPUs %v",
		sp.DB, sp.App, sp.Relay)
}

// pinDaemon moves every thread of a daemon the cost scenario started to
// the relay's CPUs (threads it starts later inherit them); a no-op without
// a relay set. Call it again once the daemon is ready: a thread started
// while the first call ran may have escaped it.
func (sp *CPUSplit) pinDaemon(pid int) error {
	if sp == nil || len(sp.Relay) == 0 {
		return nil
	}
	tids, err := threadsOf(pid)
	if err != nil {
		return err
	}
	set := cpuSet(sp.Relay)
	for _, tid := range tids {
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("setting the CPUs of %d: %w", tid, err)
		}
	}
	return nil
}

// threadsOf lists the threads of process pid.
func threadsOf(pid int) ([]int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, fmt.Errorf("listing the threads of %d: %w", pid, err)
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
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
	tids, err := threadsOf(os.Getpid())
	if err != nil {
		return was, err
	}
	for _, tid := range tids {
		if err := was.set(tid, cpuSet(sp.App)); err != nil {
			return was, err
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
		tids, _ := threadsOf(self) // none listed: nothing more to restore
		for _, tid := range tids {
			_ = unix.SchedSetaffinity(tid, &cpus)
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
