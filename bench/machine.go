package bench

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// describeMachine collects what the report needs to be comparable.
func describeMachine(ctx context.Context, db *DB, repo string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), LoadAvgBefore: loadAvg()}
	m.Host, _ = os.Hostname()
	m.CPU = procField("/proc/cpuinfo", "model name")
	if kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(procField("/proc/meminfo", "MemTotal")), " kB")); err == nil {
		m.MemoryMB = kb / 1024
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	_ = db.Pool.QueryRow(ctx, "SHOW server_version").Scan(&m.Postgres)
	m.PostgresConf = map[string]string{}
	for _, k := range []string{"fsync", "synchronous_commit", "shared_buffers", "max_connections", "work_mem"} {
		var v string
		if err := db.Pool.QueryRow(ctx, "SELECT current_setting($1)", k).Scan(&v); err == nil {
			m.PostgresConf[k] = v
		}
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", repo, "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.GitCommit = strings.TrimSpace(string(out))
		if out, err := exec.CommandContext(ctx, "git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
			m.GitCommit += " (dirty tree)"
		}
	}
	return m
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// procField returns the value of the first "key : value" line of a /proc
// file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
