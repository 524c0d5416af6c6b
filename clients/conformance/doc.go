// Package conformance holds the scenarios every snowfence client must pass
// — the Go client (package client), and the Java, Python and TypeScript
// clients beside this directory — and their driver.
//
// The scenarios are data (scenarios.json); PROTOCOL.md says how a client's
// runner is driven through them and what is checked. The driver is this
// package's test: go test ./clients/conformance builds each client's
// runner (clients/<language>/conformance-runner --build), starts real
// snowfence serve processes on loopback — three holders on one etcd and a
// fourth that requires a client certificate —, puts a fault-injecting
// proxy (proxy_test.go) in front of them, and plays every scenario against
// every client. TestCrossLanguageUnique has the four clients fetch IDs at
// once from the three holders and writes every ID to one PostgreSQL table
// with a PRIMARY KEY.
//
// The package has no code of its own: only the scenarios and the tests.
package conformance
