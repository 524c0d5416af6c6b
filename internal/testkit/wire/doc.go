// Package wire is the one format in which a holder process tells its
// harness what it does: the chaos suite's library holders
// (harness/chaos, HolderMain) and the soak tests' child processes
// (internal/testkit/soaktest, ChildMain) write frames to their standard output
// with a Writer; the chaos harness and the soak parents read them with
// Read. Commands the other way, on the child's standard input, stay text
// lines ("step <ms> <seq>", "quit"; a soak child echoes any line back).
//
// # Frames
//
// A frame is a 7-byte header, little-endian, then a payload:
//
//	offset  size  field
//	0       1     kind (see Kind)
//	1       2     generator index in its process (uint16)
//	3       4     count (uint32)
//	7       …     payload: count int64 values (8 bytes each) for a values
//	              kind, count bytes of UTF-8 text for a text kind
//
// A values frame holds at most MaxValues values, a text frame at most
// MaxText bytes (a Writer shortens longer texts, error messages for a
// human reader); Read refuses a larger count or an unknown kind with
// ErrMalformed, so a corrupt header cannot make it allocate without bound.
//
// # Whole frames only
//
// A Writer writes each frame whole under its lock, into a buffer the
// holder flushes (the chaos holder every few milliseconds, a soak child
// after every frame). A holder SIGKILLed mid-write leaves a torn frame at
// the end of its stream: Read drops it and returns nil, so the harness
// sees every frame the holder wrote whole and never reads a partial one
// as IDs. An ID counts as issued once its frame has reached the harness.
package wire
