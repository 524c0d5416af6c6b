package snowfence

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel's answer is read into ClockStatus: synchronisation, error
// bounds and the leap-second state from adjtimex's return value and status
// bits (the portable constants of leap.go are the kernel's).
func TestClockStatusOfAdjtimex(t *testing.T) {
	if timeIns != unix.TIME_INS || timeDel != unix.TIME_DEL || timeOOP != unix.TIME_OOP || timeWait != unix.TIME_WAIT ||
		timeError != unix.TIME_ERROR || timeOK != unix.TIME_OK || staIns != unix.STA_INS || staDel != unix.STA_DEL {
		t.Fatal("leap.go's constants differ from the kernel's")
	}
	for _, c := range []struct {
		name   string
		state  int
		status int32
		want   ClockStatus
	}{
		{"synchronised", unix.TIME_OK, unix.STA_PLL, ClockStatus{Synchronized: true, MaxError: 2 * time.Millisecond}},
		{"unsynchronised", unix.TIME_ERROR, unix.STA_UNSYNC, ClockStatus{MaxError: 2 * time.Millisecond}},
		{"leap announced, state not yet", unix.TIME_OK, unix.STA_PLL | unix.STA_INS, ClockStatus{Synchronized: true, MaxError: 2 * time.Millisecond, Leap: LeapInsert}},
		{"insert pending", unix.TIME_INS, unix.STA_INS, ClockStatus{Synchronized: true, MaxError: 2 * time.Millisecond, Leap: LeapInsert}},
		{"delete pending", unix.TIME_DEL, unix.STA_DEL, ClockStatus{Synchronized: true, MaxError: 2 * time.Millisecond, Leap: LeapDelete}},
		{"leap second now", unix.TIME_OOP, unix.STA_INS, ClockStatus{Synchronized: true, MaxError: 2 * time.Millisecond, Leap: LeapInProgress}},
		{"leap second done", unix.TIME_WAIT, unix.STA_INS, ClockStatus{Synchronized: true, MaxError: 2 * time.Millisecond, Leap: LeapDone}},
		{"leap announced, unsynchronised", unix.TIME_ERROR, unix.STA_UNSYNC | unix.STA_INS, ClockStatus{MaxError: 2 * time.Millisecond, Leap: LeapInsert}},
	} {
		tx := unix.Timex{Status: c.status, Maxerror: 2000}
		if got := clockStatusOf(c.state, &tx); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if !LeapInsert.Pending() || !LeapDelete.Pending() || LeapInProgress.Pending() || LeapNone.Pending() {
		t.Error("Pending is wrong")
	}
}
