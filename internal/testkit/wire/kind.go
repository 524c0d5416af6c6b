package wire

import "strconv"

// A Kind says what a frame reports and how its payload reads: as values
// (Vals, count int64s) or as text (Text, count bytes). The numbers are the
// format: a kind keeps its number for good.
type Kind byte

// The kinds. The chaos suite's library holders write IDs, Stats, Ack and
// Ready; the soak tests' child processes write IDs, Stats, Claimed,
// NoClaim, Refused, Fenced, Echo and Fatal.
const (
	// KindIDs carries IDs, in the order the generator issued them.
	KindIDs Kind = 1
	// KindStats carries cumulative counters, whose meaning the writer and
	// its reader agree on: a chaos holder sends refused calls, the machine
	// number held (−1 for none) and IDs issued; a soak child sends its
	// store's request counts.
	KindStats Kind = 2
	// KindAck acknowledges a control command: the value is its sequence
	// number.
	KindAck Kind = 3
	// KindReady says every generator of the process has its first lease.
	KindReady Kind = 4
	// KindClaimed says a keeper made its first claim: the values are the
	// machine number and the fencing token.
	KindClaimed Kind = 5
	// KindNoClaim says a keeper could not start (it is retried); the text
	// is the error.
	KindNoClaim Kind = 6
	// KindRefused says a request for IDs was refused, for a reason other
	// than the fence; the text is the error.
	KindRefused Kind = 7
	// KindFenced says a request for IDs was refused with
	// snowfence.ErrFenced; the text is the error.
	KindFenced Kind = 8
	// KindEcho echoes a line the parent wrote to the child's standard
	// input; the text is the line.
	KindEcho Kind = 9
	// KindFatal says the process could not do its work; the text is the
	// error.
	KindFatal Kind = 10
)

// Known reports whether k is one of the kinds above.
func (k Kind) Known() bool { return k >= KindIDs && k <= KindFatal }

// Text reports whether k's payload is text rather than values.
func (k Kind) Text() bool { return k >= KindNoClaim && k <= KindFatal }

// String is k's name in logs ("ids", "fenced"), or "kind(<n>)" for a kind
// that is not known.
func (k Kind) String() string {
	switch k {
	case KindIDs:
		return "ids"
	case KindStats:
		return "stats"
	case KindAck:
		return "ack"
	case KindReady:
		return "ready"
	case KindClaimed:
		return "claimed"
	case KindNoClaim:
		return "noclaim"
	case KindRefused:
		return "refused"
	case KindFenced:
		return "fenced"
	case KindEcho:
		return "echo"
	case KindFatal:
		return "fatal"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}
