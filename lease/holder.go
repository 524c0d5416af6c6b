package lease

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// ThisProcess returns this process's holder identity: host, process id and
// process start time ("host/pid-907/1790424129000"), so that a restarted
// process — same host, perhaps the same pid — is a new holder.
func ThisProcess() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("lease: holder identity: %w", err)
	}
	pid := os.Getpid()
	start, err := processStart()
	if err != nil {
		return "", fmt.Errorf("lease: holder identity: process start time: %w", err)
	}
	return fmt.Sprintf("%s/pid-%d/%d", host, pid, start.UnixMilli()), nil
}

// keepers counts the keepers this process gave a default holder.
var keepers atomic.Uint64

// defaultHolder is the holder identity of a keeper configured with none:
// ThisProcess() and "/k<N>", N counting such keepers in this process
// ("host/pid-907/1790424129000/k2"). Two keepers of one process then never
// share a holder string, which a store could take for the same claimer.
func defaultHolder() (string, error) {
	h, err := ThisProcess()
	if err != nil {
		return "", err
	}
	return uniqueHolder(h), nil
}

// processStart reads this process's start time from /proc: field 22 of
// /proc/self/stat is the start in clock ticks after boot, and /proc/stat's
// btime is the boot time in Unix seconds. Linux's USER_HZ is 100 on every
// architecture Go supports.
func processStart() (time.Time, error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return time.Time{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return time.Time{}, fmt.Errorf("unexpected /proc/self/stat: %q", s)
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	procStat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for _, line := range strings.Split(string(procStat), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, err
			}
			const userHZ = 100
			return time.UnixMilli(boot*1000 + ticks*1000/userHZ), nil
		}
	}
	return time.Time{}, fmt.Errorf("no btime in /proc/stat")
}
