package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// runbookShell returns the commands of the runbook's ```sh blocks, each
// with its continuation lines joined.
func runbookShell(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(runbookPath)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	in, cur := false, ""
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.TrimSpace(line) == "```sh":
			in = true
		case in && strings.TrimSpace(line) == "```":
			in = false
		case in:
			cur += strings.TrimSpace(strings.TrimSuffix(line, "\\")) + " "
			if !strings.HasSuffix(line, "\\") {
				cmds = append(cmds, strings.TrimSpace(cur))
				cur = ""
			}
		}
	}
	return cmds
}

// singleQuoted returns the single-quoted argument of flag in cmd.
func singleQuoted(t *testing.T, cmd, flag string) string {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(flag) + ` '([^']*)'`).FindStringSubmatch(cmd)
	if m == nil {
		t.Fatalf("%s has no %s '…'", cmd, flag)
	}
	return m[1]
}

// TestRunbookRawKeys: the runbook's raw DynamoDB commands reach the number
// they mean in every region. Every aws dynamodb command takes its --key
// from $key, which the runbook sets from snowfence leases key; run as the
// runbook gives them (with the test's table), on a registry where
// eu-west-1 is region 2, they find and quarantine eu-west-1's number 170
// — item 2218 — and leave region 0's number 170 alone, where a key
// written from the number (item 170) finds nothing.
func TestRunbookRawKeys(t *testing.T) {
	t.Parallel()
	var keyCmd, table string
	var awsCmds []string
	for _, c := range runbookShell(t) {
		if k, ok := strings.CutPrefix(c, "key=$("); ok && strings.HasPrefix(k, "snowfence leases key ") {
			keyCmd = strings.TrimSuffix(k, ")")
			table = strings.Fields(keyCmd)[slicesIndex(strings.Fields(keyCmd), "--dynamodb-table")+1]
		}
		if strings.HasPrefix(c, "aws dynamodb ") {
			if keyCmd == "" {
				t.Errorf("runbook: %q comes before key=$(snowfence leases key …)", c)
			}
			if !strings.Contains(c, `--key "$key"`) || strings.Count(c, "--key ") != 1 {
				t.Errorf("runbook: %q does not take its key, and only its key, from $key (snowfence leases key)", c)
			}
			if !strings.Contains(c, "--table-name "+table+" ") {
				t.Errorf("runbook: %q is not on the table the key was printed for (%s)", c, table)
			}
			awsCmds = append(awsCmds, c)
		}
	}
	if keyCmd == "" || !strings.Contains(keyCmd, "--region ") || len(awsCmds) < 2 {
		t.Fatalf("runbook: want key=$(snowfence leases key N --region NAME …) and the aws dynamodb get-item and update-item that use it; found %q, %q", keyCmd, awsCmds)
	}

	endpoint := os.Getenv("SNOWFENCE_TEST_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		testenv.Missing(t, "SNOWFENCE_TEST_DYNAMODB_ENDPOINT is not set: start the server with scripts/services/dynalite.sh start (scripts/test does)")
	}
	tbl := fmt.Sprintf("runbook-keys-%d", time.Now().UnixNano())
	store := []string{"--lease-store", "dynamodb", "--dynamodb-endpoint", endpoint, "--dynamodb-table", tbl, "--aws-region", "us-east-1"}
	with := func(args ...string) []string { return append(args, store...) }
	cli(t, 0, with("leases", "init")...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// v2 before any holder, through the store (schedule set keeps the
	// notice on DynamoDB), then the registry with the CLI.
	st, err := dynamostore.Connect(ctx, dynamostore.ClientConfig{Endpoint: endpoint, AWSRegion: "us-east-1"}, dynamostore.Config{Table: tbl})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.SetFleetSchedule(ctx, 0, "v2")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	cli(t, 0, with("regions", "add", "us-east-1", "--create")...)
	cli(t, 0, with("regions", "add", "eu-west-1", "--number", "2")...)
	// Both regions' number 170 have items: region 0's held by nobody,
	// eu-west-1's the one the runbook's commands are about.
	for _, region := range []string{"us-east-1", "eu-west-1"} {
		cli(t, 0, with("leases", "raise-marks", "--machines", "170-170", "--to", "now+10m", "--region", region, "--layout", "v2", "--yes")...)
	}

	// The runbook's key command, on the test's table.
	args := strings.Fields(keyCmd)[1:]
	i := slicesIndex(args, "--lease-store")
	args = append(args[:i], args[i+4:]...) // --lease-store dynamodb --dynamodb-table T
	out, _ := cli(t, 0, with(args...)...)
	key := strings.TrimSpace(out)
	if key != `{"machine_id":{"N":"2218"}}` {
		t.Errorf("%s printed %q; want eu-west-1's (region 2's) number 170, item 2218", keyCmd, key)
	}

	db := dynamodb.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("x", "x", "")},
		func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	attrs := func(text string) map[string]types.AttributeValue {
		t.Helper()
		var raw map[string]map[string]string
		if err := json.Unmarshal([]byte(text), &raw); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		m := map[string]types.AttributeValue{}
		for k, v := range raw {
			switch {
			case v["S"] != "":
				m[k] = &types.AttributeValueMemberS{Value: v["S"]}
			case v["N"] != "":
				m[k] = &types.AttributeValueMemberN{Value: v["N"]}
			default:
				t.Fatalf("%s: attribute %s is neither S nor N", text, k)
			}
		}
		return m
	}
	show := func(region string) (quarantined bool) {
		t.Helper()
		out, _ := cli(t, 0, with("leases", "show", "170", "--region", region, "--layout", "v2", "--json")...)
		var recs []struct {
			Quarantined bool `json:"quarantined"`
		}
		if err := json.Unmarshal([]byte(out), &recs); err != nil || len(recs) != 1 {
			t.Fatalf("leases show 170 --region %s: %q, %v", region, out, err)
		}
		return recs[0].Quarantined
	}
	for _, c := range awsCmds {
		switch strings.Fields(c)[2] {
		case "get-item":
			got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: attrs(key), ConsistentRead: aws.Bool(true)})
			if err != nil || got.Item == nil {
				t.Errorf("%s with the printed key: %v, %v; want eu-west-1's item", c, got, err)
			}
		case "update-item":
			in := &dynamodb.UpdateItemInput{TableName: aws.String(tbl),
				UpdateExpression:          aws.String(singleQuoted(t, c, "--update-expression")),
				ConditionExpression:       aws.String(singleQuoted(t, c, "--condition-expression")),
				ExpressionAttributeValues: attrs(singleQuoted(t, c, "--expression-attribute-values"))}
			// What the issue saw: the key from the number alone is
			// region 0's item, and quarantines us-east-1's 170 while
			// eu-west-1's holder would keep minting.
			in.Key = attrs(`{"machine_id":{"N":"170"}}`)
			if _, err := db.UpdateItem(ctx, in); err != nil {
				t.Fatalf("%s with the key from the number alone: %v", c, err)
			}
			if !show("us-east-1") || show("eu-west-1") {
				t.Fatalf("the key from the number alone did not reach region 0's item, as the issue found: the test no longer shows the hazard")
			}
			cli(t, 0, with("leases", "release", "170", "--region", "us-east-1", "--layout", "v2")...)
			in.Key = attrs(key)
			if _, err := db.UpdateItem(ctx, in); err != nil {
				t.Fatalf("%s with the printed key: %v", c, err)
			}
		default:
			t.Errorf("runbook: %q: the test knows get-item and update-item only", c)
		}
	}
	if !show("eu-west-1") || show("us-east-1") {
		t.Errorf("after the runbook's update-item: eu-west-1's 170 quarantined %v, us-east-1's %v; want eu-west-1's only", show("eu-west-1"), show("us-east-1"))
	}
}

// slicesIndex is the index of v in s, -1 if absent.
func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
