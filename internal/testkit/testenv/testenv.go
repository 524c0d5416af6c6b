// Package testenv holds what the tests share about their environment: the
// servers scripts/test starts for them, and the rule that under CI=true a
// missing server fails a test instead of skipping it (a skip would hide the
// tests CI exists to run).
package testenv

import (
	"os"
	"testing"
)

// PostgresURLEnv names the PostgreSQL the tests use;
// scripts/services/postgres.sh start prints one.
const PostgresURLEnv = "SNOWFENCE_TEST_POSTGRES_URL"

// CI reports whether the tests run under CI=true.
func CI() bool { return os.Getenv("CI") == "true" }

// Missing ends tb because something it needs is missing: a skip with msg,
// or a failure under CI=true.
func Missing(tb testing.TB, msg string) {
	tb.Helper()
	if CI() {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// PostgresURL returns the test PostgreSQL's URL, or calls Missing.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(PostgresURLEnv)
	if u == "" {
		Missing(tb, "no PostgreSQL: set "+PostgresURLEnv+`, e.g. export `+PostgresURLEnv+`="$(scripts/services/postgres.sh start)"`)
	}
	return u
}

// DynamoDBEndpointEnv names the test DynamoDB endpoint (dynalite) that
// scripts/test starts.
const DynamoDBEndpointEnv = "SNOWFENCE_TEST_DYNAMODB_ENDPOINT"

// DynamoDBEndpoint returns the test DynamoDB endpoint, or calls Missing.
func DynamoDBEndpoint(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(DynamoDBEndpointEnv)
	if u == "" {
		Missing(tb, "no DynamoDB endpoint: set "+DynamoDBEndpointEnv+`, e.g. export `+DynamoDBEndpointEnv+`="$(scripts/services/dynalite.sh start)"`)
	}
	return u
}

// ZooKeeperLaterEnv, when set (to anything), makes ZooKeeperLater skip:
// scripts/test sets it for its race run, whose timing-sensitive tests the
// JVMs of a ZooKeeper server upset, and runs the harness's ZooKeeper parts
// in a step of their own afterwards, as it runs zkstore's.
const ZooKeeperLaterEnv = "SNOWFENCE_TEST_ZOOKEEPER_LATER"

// ZooKeeperLater skips tb when ZooKeeperLaterEnv is set — even under
// CI=true: the step that sets it runs the same tests later.
func ZooKeeperLater(tb testing.TB) {
	tb.Helper()
	if os.Getenv(ZooKeeperLaterEnv) != "" {
		tb.Skip(ZooKeeperLaterEnv + " is set: ZooKeeper's part runs in a step of its own (scripts/test)")
	}
}

// KubernetesLaterEnv, when set, asks every test that would start a
// kube-apiserver (internal/testkit/k8stest) to skip: scripts/test's race
// run sets it, since an API server's start takes seconds of both cores,
// which the timing-sensitive tests beside it would feel, and runs the
// Kubernetes parts in a step of their own afterwards, as it does
// ZooKeeper's.
const KubernetesLaterEnv = "SNOWFENCE_TEST_KUBERNETES_LATER"

// KubernetesLater skips tb when KubernetesLaterEnv is set — even under
// CI=true: the step that sets it runs the same tests later.
func KubernetesLater(tb testing.TB) {
	tb.Helper()
	if os.Getenv(KubernetesLaterEnv) != "" {
		tb.Skip(KubernetesLaterEnv + " is set: the Kubernetes part runs in a step of its own (scripts/test)")
	}
}
