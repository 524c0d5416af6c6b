package k8stest

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: Linux's USER_HZ,
// 100 on every architecture Go runs on.
const userHZ = 100

// cpuTime is the CPU time, user and system, that process pid has used,
// from /proc/PID/stat; zero where it cannot be read. The kit logs it to
// show what a start of the API server costs.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing one (field 3, the state, is rest[0]).
	i := strings.LastIndex(string(b), ") ")
	if i < 0 {
		return 0
	}
	rest := strings.Fields(string(b)[i+2:])
	if len(rest) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(rest[11], 10, 64)
	stime, err2 := strconv.ParseInt(rest[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / userHZ
}
