package storeproc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/jackc/pgx/v5"

	"github.com/snowfence/snowfence/internal/testkit/testenv"
)

// count reads the one row count of table t.
func count(t *testing.T, url string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func execSQL(t *testing.T, url, sql string) {
	t.Helper()
	c, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	if _, err := c.Exec(t.Context(), sql); err != nil {
		t.Fatal(err)
	}
}

// The cluster survives a crash, freezes whole, and goes back to a base
// backup: the row written after the backup is gone.
func TestPostgresFaults(t *testing.T) {
	p, err := StartPostgres(t.Context())
	if errors.Is(err, ErrMissing) {
		testenv.Missing(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	execSQL(t, p.URL(), "CREATE TABLE t (v int); INSERT INTO t VALUES (1)")
	backup, err := p.BaseBackup(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	execSQL(t, p.URL(), "INSERT INTO t VALUES (2)")

	if err := p.Freeze(); err != nil {
		t.Fatal(err)
	}
	if p.Frozen() < 3 {
		t.Errorf("froze %d processes; want the postmaster and its children", p.Frozen())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	if c, err := pgx.Connect(ctx, p.URL()); err == nil {
		c.Close(context.Background())
		t.Error("a frozen cluster answered")
	}
	cancel()
	if err := p.Thaw(); err != nil {
		t.Fatal(err)
	}
	if got := count(t, p.URL()); got != 2 {
		t.Errorf("after the thaw: %d rows, want 2", got)
	}

	if err := p.StopImmediate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	if got := count(t, p.URL()); got != 2 {
		t.Errorf("after a crash: %d rows, want 2 (committed)", got)
	}

	if err := p.StopImmediate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := p.Restore(t.Context(), backup, true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), time.Second)
	if c, err := pgx.Connect(ctx, p.URL()); err == nil {
		c.Close(context.Background())
		t.Error("a socket-only cluster answered on TCP")
	}
	cancel()
	if got := count(t, p.SocketURL()); got != 1 {
		t.Errorf("restored: %d rows, want 1 (the backup's)", got)
	}
	if err := p.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := count(t, p.URL()); got != 1 {
		t.Errorf("restored, on TCP: %d rows, want 1", got)
	}

	// A cold copy put back: the row written after it is gone.
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	cp, err := p.CopyData(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	execSQL(t, p.URL(), "INSERT INTO t VALUES (3)")
	if _, err := p.CopyData(t.Context()); !errors.Is(err, ErrNotRunning) {
		t.Errorf("CopyData of a running cluster: %v, want ErrNotRunning", err)
	}
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := p.Restore(t.Context(), cp, false); err != nil {
		t.Fatal(err)
	}
	if got := count(t, p.URL()); got != 1 {
		t.Errorf("back on the cold copy: %d rows, want 1 (the copy's)", got)
	}
}

// dynalite keeps its tables across a SIGKILL, and a frozen one answers
// nothing.
func TestDynaliteFaults(t *testing.T) {
	d, err := StartDynalite(t.Context())
	if errors.Is(err, ErrMissing) {
		testenv.Missing(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg, err := config.LoadDefaultConfig(t.Context(), config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("x", "x", "")))
	if err != nil {
		t.Fatal(err)
	}
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(d.URL()) })
	if _, err := db.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String("tbl"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("k"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("k"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	if err := d.Freeze(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	if _, err := db.ListTables(ctx, &dynamodb.ListTablesInput{}); err == nil {
		t.Error("a frozen dynalite answered")
	}
	cancel()
	if err := d.Thaw(); err != nil {
		t.Fatal(err)
	}
	if err := d.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	out, err := db.ListTables(t.Context(), &dynamodb.ListTablesInput{})
	if err != nil || len(out.TableNames) != 1 {
		t.Fatalf("after a SIGKILL and a start: tables %v, %v; want [tbl]", out, err)
	}

	// A cold copy put back: the item written after it is gone, and the
	// table keeps its TableId. (Killed right after CreateTable above, tbl
	// may have been kept as CREATING: a table of its own, made active.)
	if _, err := db.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String("tbl2"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("k"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("k"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	if err := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 20 * time.Millisecond }).
		Wait(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String("tbl2")}, time.Minute); err != nil {
		t.Fatal(err)
	}
	idOf := func() string {
		t.Helper()
		out, err := db.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String("tbl2")})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.Table.TableId)
	}
	before := idOf()
	if err := d.Kill(); err != nil {
		t.Fatal(err)
	}
	cp, err := d.CopyData(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CopyData(t.Context()); !errors.Is(err, ErrNotRunning) {
		t.Errorf("CopyData of a running dynalite: %v, want ErrNotRunning", err)
	}
	if _, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String("tbl2"),
		Item: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "after"}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := d.Restore(t.Context(), cp); err != nil {
		t.Fatal(err)
	}
	scan, err := db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String("tbl2")})
	if err != nil || len(scan.Items) != 0 {
		t.Errorf("back on the cold copy: %v items, %v; want none", scan, err)
	}
	if after := idOf(); after != before {
		t.Errorf("TableId %s after the restore, %s before: a cold copy keeps it", after, before)
	}
}
