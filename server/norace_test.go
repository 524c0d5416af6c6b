//go:build !race

package server

// raceEnabled is whether the tests run under the race detector.
const raceEnabled = false
