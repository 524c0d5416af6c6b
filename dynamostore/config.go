package dynamostore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/snowfence/snowfence/internal/testbound"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/snowfence/snowfence/lease"
)

// Defaults for the zero fields of Config.
const (
	DefaultTable          = "idgen-leases"
	DefaultRequestTimeout = 5 * time.Second
	DefaultMaxReserve     = 5 * time.Minute
	DefaultIdentityEvery  = 30 * time.Second
	// JournalTableSuffix makes the default Config.JournalTable from
	// Config.Table.
	JournalTableSuffix = "-journal"
)

// Machines is how many machine numbers each region has: machine_id is
// Region×Machines + number.
const Machines = 1024

// MaxRegion bounds Config.Region: far above any layout's region bits, and
// low enough that Region×Machines + number can never wrap onto another
// region's items or the table's own (machine_id -1 to -3).
const MaxRegion = 1 << 20

// Config configures a Store. The zero value is a valid configuration: the
// table "idgen-leases" with its journal table "idgen-leases-journal",
// region 0, no logging.
type Config struct {
	// Table is the lease table's name. Zero: "idgen-leases".
	Table string
	// JournalTable is the name of the table that keeps the lease
	// journal's older entries (journal.go), which CreateTable creates
	// beside the lease table. Zero: Table + "-journal".
	JournalTable string
	// Region is the snowfence region whose machine numbers this store
	// leases: its items are machine_id Region×1024 … Region×1024+1023, so
	// one table serves every region. Negative is invalid, and so is
	// MaxRegion or more.
	Region int
	// Logger receives a line for every claim, failed renewal, release,
	// quarantine and raised mark, with machine, holder, epoch and mark. Nil
	// discards them.
	Logger *slog.Logger
	// RequestTimeout bounds the requests the store makes on its own after a
	// caller's request failed: re-reading an item whose write has an
	// unknown outcome, undoing a claim. Zero: 5 s.
	RequestTimeout time.Duration
	// MaxReserve is the longest any holder reserves ahead of its clock (the
	// keeper's Reserve), as this process knows it. Unquarantine of a number
	// quarantined by hand (the runbook's update-item command, which keeps no
	// pre-quarantine mark) restores the time of the unquarantine plus
	// MaxReserve and a tenth, or MaxRestoreWindow if longer (every keeper on
	// this store reserves less: StartKeeper refuses a longer restore
	// window), or mark_floor if higher; a claim after a restore was
	// noticed starts as long after the moment it was noticed. Zero: 5
	// minutes.
	MaxReserve time.Duration
	// IdentityEvery is how often, at most, Extend compares the table's
	// TableId (DescribeTable) with the one the store saw first, to notice a
	// point-in-time restore (restore.go); every Claim compares it. Zero:
	// 30 s. Negative: only on Claim.
	IdentityEvery time.Duration
	// TestBound is for the project's own tests (its type is internal: a
	// library user leaves it zero). Every claim's first grant on a table
	// waits MaxNoticeWindow, which covers the longest self-fence any holder
	// of the table may have; nothing in the table records a shorter one, so
	// only a test fleet, whose every process the test starts with the same
	// bound, may shorten it (internal/testbound).
	TestBound testbound.Bound
}

func (c Config) withDefaults() (Config, error) {
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if c.JournalTable == "" {
		c.JournalTable = c.Table + JournalTableSuffix
	}
	if c.JournalTable == c.Table {
		return c, fmt.Errorf("%w: dynamostore: the journal table must not be the lease table %s", lease.ErrInvalid, c.Table)
	}
	if c.Region < 0 || c.Region >= MaxRegion {
		return c, fmt.Errorf("%w: dynamostore: region %d is outside 0 to %d", lease.ErrInvalid, c.Region, MaxRegion-1)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if err := c.TestBound.Check(); err != nil {
		return c, fmt.Errorf("%w: dynamostore: %w", lease.ErrInvalid, err)
	}
	if c.MaxReserve <= 0 {
		c.MaxReserve = DefaultMaxReserve
	}
	if c.IdentityEvery == 0 {
		c.IdentityEvery = DefaultIdentityEvery
	}
	return c, nil
}

// ClientConfig says how Connect reaches DynamoDB. The zero value uses the
// SDK's default chain (environment, shared config, instance role) and its
// region.
type ClientConfig struct {
	// Endpoint overrides the service URL, e.g. "http://127.0.0.1:4567" for
	// dynalite or DynamoDB Local. Empty: the AWS endpoint of AWSRegion.
	Endpoint string
	// AWSRegion is the AWS region, e.g. "eu-west-1". Empty: the SDK's
	// default (AWS_REGION, shared config); with an Endpoint and no region
	// anywhere, "us-east-1".
	AWSRegion string
	// AccessKeyID and SecretAccessKey, when set, are static credentials
	// (local servers accept any). Empty: the SDK's default chain.
	AccessKeyID     string
	SecretAccessKey string
	// RetryMaxAttempts caps the SDK's attempts per request, retries
	// included. Zero: the SDK default (3).
	RetryMaxAttempts int
}

// Connect builds a DynamoDB client from cc and returns a Store on it.
func Connect(ctx context.Context, cc ClientConfig, cfg Config) (*Store, error) {
	var opts []func(*config.LoadOptions) error
	region := cc.AWSRegion
	if region == "" && cc.Endpoint != "" {
		region = "us-east-1"
	}
	if cc.AWSRegion != "" {
		opts = append(opts, config.WithRegion(cc.AWSRegion))
	}
	if cc.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cc.AccessKeyID, cc.SecretAccessKey, "")))
	}
	if cc.RetryMaxAttempts > 0 {
		opts = append(opts, config.WithRetryMaxAttempts(cc.RetryMaxAttempts))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("dynamostore: load AWS configuration: %w; set the region and credentials (AWS_REGION, AWS_PROFILE) or pass them in ClientConfig", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = region
	}
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("%w: dynamostore: no AWS region: set ClientConfig.AWSRegion or AWS_REGION", lease.ErrInvalid)
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cc.Endpoint != "" {
			o.BaseEndpoint = aws.String(cc.Endpoint)
		}
	})
	return New(client, cfg)
}
