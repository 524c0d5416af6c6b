package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/snowfence/snowfence/internal/testbound"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// TestMain gives the AWS SDK the credentials it wants for dynalite, which
// takes any, unless the environment has some: once for the package, so
// that the table stores' subtests may run in parallel (t.Setenv may not).
// It also runs every serve the tests start under clock policy warn
// (SNOWFENCE_CLOCK_POLICY, which the processes inherit), unless the
// environment sets one: the default with a shared store, require,
// refuses on a host whose kernel reports its clock unsynchronised, as
// test machines and containers without a time daemon do, and these tests
// are about other things. The default itself is tested without it
// (TestServeClockPolicyFlags, node's TestClockPolicyDefaultFollowsTheStore).
func TestMain(m *testing.M) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		if os.Getenv(k) == "" {
			os.Setenv(k, "snowfence-test")
		}
	}
	if os.Getenv("SNOWFENCE_CLOCK_POLICY") == "" {
		os.Setenv("SNOWFENCE_CLOCK_POLICY", "warn")
	}
	// Every process these tests start on a lease table shares the test
	// bound (a binary built with snowfence_testbound reads it; see
	// e2eTableMaxSelfFence).
	os.Setenv(testbound.EnvMaxSelfFence, e2eTableMaxSelfFence.String())
	os.Exit(m.Run())
}

// forEachTableStore runs f as a parallel subtest per lease table — PostgreSQL and
// DynamoDB (dynalite), started by scripts/test (scripts/services/*.sh) —
// with the store flags that point serve and the CLI at a table named
// after table ("_" in PostgreSQL, "-" in DynamoDB). A server whose address
// is not set is missing: a failure under CI=true, a skip elsewhere.
func forEachTableStore(t *testing.T, table string, f func(t *testing.T, flags []string)) {
	t.Helper()
	for _, st := range []struct {
		name, env, script string
		flags             func(v string) []string
	}{
		{"postgres", "SNOWFENCE_TEST_POSTGRES_URL", "postgres", func(v string) []string {
			return []string{"--lease-store", "postgres", "--postgres-url", v, "--postgres-table", table + "_leases"}
		}},
		{"dynamodb", "SNOWFENCE_TEST_DYNAMODB_ENDPOINT", "dynalite", func(v string) []string {
			return []string{"--lease-store", "dynamodb", "--dynamodb-endpoint", v, "--dynamodb-table", table + "-leases", "--aws-region", "us-east-1"}
		}},
	} {
		t.Run(st.name, func(t *testing.T) {
			// A table of its own on a server of its own kind; most of it
			// waits out the claims' notice windows (23 s on the tables in these tests).
			t.Parallel()
			v := os.Getenv(st.env)
			if v == "" {
				testenv.Missing(t, fmt.Sprintf("%s is not set: start the server with scripts/services/%s.sh start (scripts/test does)", st.env, st.script))
			}
			f(t, st.flags(v))
		})
	}
}
