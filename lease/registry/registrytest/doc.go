// Package registrytest is the conformance suite of a store's copy of the
// region registry (registry.Store): Run checks one copy's reads and
// compared writes (checks.go), changes over two copies, a copy's identity
// and a copy joining (identity.go). A lease store of this module runs it
// through leasetest.RegistryHarness. mem.go holds Mem, a copy in memory
// for the tests of what is built on the registry, and the helpers those
// tests share.
package registrytest
