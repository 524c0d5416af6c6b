package snowfence

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// KernelClockStatus reads the clock's synchronisation and leap-second state
// with adjtimex(2) in read-only mode. It costs a system call: read it at
// most every second or so, never per ID.
func KernelClockStatus() (ClockStatus, error) {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return ClockStatus{}, fmt.Errorf("snowfence: adjtimex: %w", err)
	}
	return clockStatusOf(state, &tx), nil
}

// clockStatusOf reads adjtimex's return value and structure.
func clockStatusOf(state int, tx *unix.Timex) ClockStatus {
	offset := time.Duration(tx.Offset) * time.Microsecond
	if tx.Status&unix.STA_NANO != 0 {
		offset = time.Duration(tx.Offset)
	}
	return ClockStatus{
		Synchronized:   tx.Status&unix.STA_UNSYNC == 0 && state != unix.TIME_ERROR,
		EstimatedError: time.Duration(tx.Esterror) * time.Microsecond,
		MaxError:       time.Duration(tx.Maxerror) * time.Microsecond,
		Offset:         offset,
		Leap:           leapState(state, tx.Status),
	}
}
