//go:build !unix

package perimeter

// openNonblock is nothing where the platform has no such flag; the file's
// kind is still checked before it is read.
const openNonblock = 0
