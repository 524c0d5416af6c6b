package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// settingNames are the server settings the measurements depend on; they are
// printed and recorded with the results.
var settingNames = []string{
	"server_version", "shared_buffers", "wal_level", "full_page_writes", "wal_compression",
	"synchronous_commit", "fsync", "max_wal_size", "min_wal_size", "checkpoint_timeout",
	"checkpoint_completion_target", "wal_buffers", "autovacuum", "huge_pages",
}

// setting is one server setting as SHOW prints it.
type setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// readSettings returns the settings of settingNames.
func readSettings(ctx context.Context, conn *pgx.Conn) ([]setting, error) {
	var out []setting
	for _, name := range settingNames {
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			return nil, fmt.Errorf("setting %s: %w", name, err)
		}
		out = append(out, setting{name, v})
	}
	return out, nil
}

// checkSettings refuses a server whose WAL would not show what random keys
// cost: without full-page images the WAL measures only the rows.
func checkSettings(ss []setting) error {
	for _, s := range ss {
		if s.Name == "full_page_writes" && s.Value != "on" {
			return fmt.Errorf("full_page_writes is %s: the WAL bytes would leave out the full-page images random keys cost; set full_page_writes = on (bench/keys/run.sh does)", s.Value)
		}
	}
	return nil
}

// prepare creates the extensions the measurements use.
func prepare(ctx context.Context, conn *pgx.Conn) error {
	for _, ext := range []string{"pgstattuple", "pg_prewarm"} {
		if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS "+ext); err != nil {
			return fmt.Errorf("CREATE EXTENSION %s (Debian's postgresql package includes it): %w", ext, err)
		}
	}
	return nil
}

// machine describes the machine the program runs on, from /proc and
// /etc/os-release (the server is on the same machine when run.sh starts
// it).
type machine struct {
	CPU      string `json:"cpu"`
	CPUs     int    `json:"cpus"`
	MemBytes int64  `json:"mem_bytes"`
	OS       string `json:"os"`
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), CPU: "unknown", OS: runtime.GOOS}
	scan := func(path string, line func(k, v string)) {
		f, err := os.Open(path)
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
				line(strings.TrimSpace(k), strings.TrimSpace(v))
			} else if k, v, ok := strings.Cut(sc.Text(), "="); ok {
				line(k, strings.Trim(v, `"`))
			}
		}
	}
	scan("/proc/cpuinfo", func(k, v string) {
		if k == "model name" {
			m.CPU = v
		}
	})
	scan("/proc/meminfo", func(k, v string) {
		if k == "MemTotal" {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
			m.MemBytes = kb << 10
		}
	})
	scan("/etc/os-release", func(k, v string) {
		if k == "PRETTY_NAME" {
			m.OS = v
		}
	})
	return m
}

func (m machine) String() string {
	return fmt.Sprintf("%d vCPU %s, %.1f GiB RAM, %s", m.CPUs, m.CPU, float64(m.MemBytes)/(1<<30), m.OS)
}
