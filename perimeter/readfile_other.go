//go:build !unix

package perimeter

// openFlags are none where the platform has no such flags; the file's
// kind is still checked before it is read.
const openFlags = 0
