// Package harness is the root of the harness module
// (github.com/snowfence/snowfence/harness): the code that tries to make
// snowfence issue an ID twice, kept out of the product module so that
// go vet ./... and go test ./... at the repository's root never compile
// it, and the binary never could link it. The module builds the product
// from this repository (replace github.com/snowfence/snowfence => ../),
// with the same dependency versions as the product's go.mod; build tags
// apply to the whole build, so scripts/prove-search's revert tags reach
// the product code the search links.
//
// It holds:
//
//   - chaos: the fault-injection suite — the failure stories of
//     docs/design.md run against real processes (snowfence services,
//     library holders, etcd members, PostgreSQL, dynalite), every
//     acknowledged ID checked against a PostgreSQL PRIMARY KEY; with
//     chaos/etcdproc (etcd members as processes), chaos/oracle (the
//     PRIMARY KEY), chaos/netns (network namespaces and a cuttable proxy)
//     and chaos/results (the recorded reports).
//   - cmd/snowfence-chaos: the command that runs the suite and writes its
//     report (scripts/test runs its short mode).
//   - explore: the search for the next duplicate — seeded random worlds of
//     real keepers and generators on fake clocks against the three real
//     stores (scripts/test runs its fixed seeds; scripts/prove-search
//     builds it with each revert tag).
//
// It imports the product's public packages and its test kit
// (internal/testkit), and one internal package the binary links:
// internal/offsetclock, the clock whose wall reading the chaos suite's
// library holders step (as serve --test-clock-offset does). Run from this
// directory: go test ./..., go run ./cmd/snowfence-chaos;
// docs/reliability.md has the commands and the figures.
package harness
