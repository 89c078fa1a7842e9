package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// cpuGroups attributes CPU time to the processes of a scenario: the bench
// itself, the Postgres server (postmaster and backends), the emulator's
// process group, each daemon, and "other" (everything else on the machine:
// on a shared machine, the noise).
type cpuGroups struct {
	postmaster   int
	emulatorPGID int
	daemons      map[int]string
}

// cpuSample is CPU seconds per group plus the machine's busy seconds.
type cpuSample struct {
	at     time.Time
	groups map[string]float64
	busy   float64
}

func (g *cpuGroups) sample() cpuSample {
	s := cpuSample{at: time.Now(), groups: map[string]float64{}, busy: machineBusy()}
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := readStat(pid)
		if !ok {
			continue
		}
		own := float64(st.utime+st.stime) / clockTicks
		kids := float64(st.cutime+st.cstime) / clockTicks
		switch {
		case pid == self:
			s.groups["bench"] += own
		case g.postmaster != 0 && pid == g.postmaster:
			s.groups["postgres"] += own + kids
		case g.postmaster != 0 && st.ppid == g.postmaster:
			s.groups["postgres"] += own
		case g.emulatorPGID != 0 && st.pgrp == g.emulatorPGID:
			s.groups["emulator"] += own
		case g.daemons[pid] != "":
			s.groups[g.daemons[pid]] += own + kids
		}
	}
	return s
}

// cpuUse is the average cores used per group between two samples.
type cpuUse struct {
	Seconds float64
	Cores   map[string]float64
}

func (a cpuSample) to(b cpuSample) cpuUse {
	d := b.at.Sub(a.at).Seconds()
	u := cpuUse{Seconds: d, Cores: map[string]float64{}}
	if d <= 0 {
		return u
	}
	var ours float64
	for k, v := range b.groups {
		c := (v - a.groups[k]) / d
		if c < 0 {
			c = 0
		}
		u.Cores[k] = c
		ours += c
	}
	if busy := (b.busy - a.busy) / d; busy > ours {
		u.Cores["other"] = busy - ours
	}
	return u
}

// String lists the groups by cores used, e.g. "postgres 1.21, bench 0.40".
func (u cpuUse) String() string {
	type kv struct {
		k string
		v float64
	}
	var l []kv
	for k, v := range u.Cores {
		if v >= 0.01 {
			l = append(l, kv{k, v})
		}
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v })
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = fmt.Sprintf("%s %.2f", x.k, x.v)
	}
	return "cpu cores: " + strings.Join(parts, ", ") + " => " + u.verdict()
}

// verdict says whether the measured processes were CPU-bound: the busiest
// group near a full core or the machine near all cores means CPU; less
// means the loop was waiting (round trips, commit flushes, lingers, locks).
func (u cpuUse) verdict() string {
	name, c := u.top()
	var all float64
	for _, v := range u.Cores {
		all += v
	}
	cores := float64(runtime.NumCPU())
	switch {
	case all >= 0.85*cores:
		return fmt.Sprintf("machine CPU-saturated (%.2f of %.0f cores busy; %s the busiest at %.2f)", all, cores, name, c)
	case c >= 0.85:
		return fmt.Sprintf("%s CPU-bound (%.2f cores)", name, c)
	default:
		return fmt.Sprintf("not CPU-bound (%.2f of %.0f cores busy): waiting on round trips, commits, lingers or locks", all, cores)
	}
}

// top returns the busiest group other than "other".
func (u cpuUse) top() (string, float64) {
	var name string
	var best float64
	for k, v := range u.Cores {
		if k != "other" && v > best {
			name, best = k, v
		}
	}
	return name, best
}

type procStat struct {
	ppid, pgrp                   int
	utime, stime, cutime, cstime int64
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime is field 14.
	if len(f) < 15 {
		return procStat{}, false
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	return procStat{ppid: int(n(4)), pgrp: int(n(5)), utime: n(14), stime: n(15), cutime: n(16), cstime: n(17)}, true
}

// machineBusy returns the machine's non-idle CPU seconds since boot.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, x := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 7 { // guest time is already in user
			break
		}
		v, _ := strconv.ParseInt(x, 10, 64)
		busy += v
	}
	return float64(busy) / clockTicks
}

// findPostmaster returns the pid of the Postgres server the pool talks to
// (the parent of a backend), or 0 when it is not local.
func findPostmaster(ctx context.Context, db *DB) int {
	var backend int
	if err := db.Pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0
	}
	st, ok := readStat(backend)
	if !ok {
		return 0
	}
	return st.ppid
}

// peakRSS returns VmHWM of pid in MB (0 when unknown).
func peakRSS(pid int) float64 {
	v := procField(filepath.Join("/proc", strconv.Itoa(pid), "status"), "VmHWM")
	kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(v, "kB")))
	if err != nil {
		return 0
	}
	return float64(kb) / 1024
}
