package snowfence

// A LeapState is the kernel's leap-second state, as adjtimex(2) reports it
// (its return value TIME_INS, TIME_DEL, TIME_OOP, TIME_WAIT and the
// STA_INS and STA_DEL status bits the time daemon sets).
//
// The kernel announces a leap second only when the time daemon hands it
// on (ntpd, chronyd with leapsecmode system — chrony's default): at the
// end of the UTC day the kernel then steps the wall clock back 1 s for an
// inserted second. The generator refuses IDs for up to that second
// (clock-backwards: the clock is behind the last issued timestamp) and
// issues no duplicate. A smeared leap second (chronyd leapsecmode slew,
// smoothtime, or a smearing time source) never reaches the kernel's flags
// and costs no refusal: docs/deployment.md says how to set it up.
type LeapState string

const (
	// LeapNone: no leap second announced.
	LeapNone LeapState = ""
	// LeapInsert: a second is to be inserted at the end of the UTC day
	// (STA_INS, state TIME_INS): the kernel will step the clock back 1 s.
	LeapInsert LeapState = "insert"
	// LeapDelete: a second is to be deleted at the end of the UTC day
	// (STA_DEL, state TIME_DEL): the kernel will step the clock ahead 1 s.
	LeapDelete LeapState = "delete"
	// LeapInProgress: the inserted second is now (state TIME_OOP).
	LeapInProgress LeapState = "in-progress"
	// LeapDone: a leap second has just happened (state TIME_WAIT), until
	// the time daemon clears its flag.
	LeapDone LeapState = "done"
)

// The kernel's clock states (adjtimex(2) return values), the same on every
// Linux architecture.
const (
	timeOK    = 0
	timeIns   = 1
	timeDel   = 2
	timeOOP   = 3
	timeWait  = 4
	timeError = 5
)

// The status bits for a leap second (STA_INS, STA_DEL).
const (
	staIns = 0x0010
	staDel = 0x0020
)

// leapState reads the leap-second state from adjtimex's return value and
// status bits.
func leapState(state int, status int32) LeapState {
	switch {
	case state == timeOOP:
		return LeapInProgress
	case state == timeWait:
		return LeapDone
	case state == timeIns || status&staIns != 0:
		return LeapInsert
	case state == timeDel || status&staDel != 0:
		return LeapDelete
	}
	return LeapNone
}

// Pending reports whether the kernel will step the clock for a leap second
// at the end of the UTC day (LeapInsert or LeapDelete).
func (l LeapState) Pending() bool { return l == LeapInsert || l == LeapDelete }

// warning is Health's warning for a leap second the kernel steps for.
func (l LeapState) warning() string {
	switch l {
	case LeapInsert, LeapInProgress:
		return "the kernel steps the clock back 1 s for a leap second at the end of the UTC day (" + string(l) +
			"): this holder refuses IDs for up to 1 s then; smear leap seconds instead (chrony leapsecmode slew, see docs/deployment.md)"
	case LeapDelete:
		return "the kernel steps the clock ahead 1 s for a deleted leap second at the end of the UTC day; smear leap seconds instead (chrony leapsecmode slew, see docs/deployment.md)"
	}
	return ""
}
