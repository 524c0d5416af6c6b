package explore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snowfence/snowfence/dynamostore"
	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/internal/testkit/dynashim"
	"github.com/snowfence/snowfence/internal/testkit/etcdtest"
	"github.com/snowfence/snowfence/internal/testkit/testenv"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
)

// Store kinds, as -store and -explore.stores name them.
const (
	storeEtcd     = "etcd"
	storePostgres = "postgres"
	storeDynamo   = "dynamodb"
	storeZK       = "zookeeper"
	storeK8s      = "kubernetes"
)

var storeKinds = []string{storeEtcd, storePostgres, storeDynamo, storeZK, storeK8s}

// dynamoEndpointEnv names the dynalite the DynamoDB store is tested on.
const dynamoEndpointEnv = "SNOWFENCE_TEST_DYNAMODB_ENDPOINT"

// A service is one store kind's server, shared by the worlds of one run.
type service interface {
	// space makes a fresh key space for one world: stores independent
	// lease stores of the kind (etcd: key prefixes of their own;
	// PostgreSQL and DynamoDB: tables of their own), each with its own
	// registry copy, fleet schedule record and identity
	// (registry.Store's RegistryIdentity).
	space(ctx context.Context, seed uint64, stores int) (space, error)
	close()
}

// A space is one world's part of a service: one store, or in a registry
// world (registry_test.go) two or three independent ones.
type space interface {
	// open returns a new store object (its own connection where the kind
	// has one) on store number store of the space, for one region.
	open(ctx context.Context, store, region int) (lease.Admin, error)
	// snapshot saves the data of every store of the space; restore writes
	// the last snapshot back. detectable says whether the store must
	// notice the restore by itself (if not, the operator step follows).
	snapshot(ctx context.Context) error
	restore(ctx context.Context, how restoreHow) (detectable bool, err error)
	// dropReplies loses the replies of the next n writes of every holder,
	// if the kind does that below the store (the DynamoDB shim); false
	// means the faultyStore wrapper does it.
	dropReplies(n int) bool
	// dropped returns the replies dropped below the store so far.
	dropped() int
	close()
}

// restoreHow says how an etcd restore is made (the tables and ZooKeeper
// ignore it).
type restoreHow struct {
	newToken bool
	bump     uint64
}

func (h restoreHow) String() string {
	return fmt.Sprintf("new cluster token %v, revision bump %d", h.newToken, h.bump)
}

// startService starts (or finds) the service of kind, calling
// testenv.Missing when its server is not there.
func startService(t *testing.T, kind string) service {
	t.Helper()
	switch kind {
	case storeEtcd:
		return &etcdService{t: t, c: etcdtest.Start(t, 1)}
	case storePostgres:
		url := testenv.PostgresURL(t)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		pool, err := pgxpool.New(ctx, url)
		if err == nil {
			err = pool.Ping(ctx)
		}
		if err != nil {
			t.Fatalf("connect to %s: %v (is scripts/services/postgres.sh running?)", testenv.PostgresURLEnv, err)
		}
		return &pgService{pool: pool}
	case storeDynamo:
		ep := os.Getenv(dynamoEndpointEnv)
		if ep == "" {
			testenv.Missing(t, dynamoEndpointEnv+" is not set: run `export "+dynamoEndpointEnv+"=$(scripts/services/dynalite.sh start)`, or scripts/test")
		}
		sh, err := dynashim.Start(ep)
		if err != nil {
			t.Fatalf("dynashim in front of %s: %v", ep, err)
		}
		return &dynamoService{upstream: ep, shim: sh}
	case storeZK:
		return startZooKeeper(t) // backend_zk_test.go
	case storeK8s:
		return startKubernetes(t) // backend_k8s_test.go
	}
	t.Fatalf("unknown store %q: use one of %v", kind, storeKinds)
	return nil
}

func randomSuffix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// --- etcd ------------------------------------------------------------------

type etcdService struct {
	t *testing.T
	c *etcdtest.Cluster
}

func (s *etcdService) close() {}

func (s *etcdService) space(ctx context.Context, seed uint64, stores int) (space, error) {
	e := &etcdSpace{svc: s}
	base := fmt.Sprintf("/explore/%d-%s", seed, randomSuffix())
	for i := range stores {
		// Two prefixes of one cluster are two stores: their keys, registry
		// copies and identities (cluster ID and registry key) are apart.
		e.prefixes = append(e.prefixes, fmt.Sprintf("%s/s%d", base, i))
	}
	return e, nil
}

type etcdSpace struct {
	svc      *etcdService
	prefixes []string // by store
	snap     string
	stores   []*etcdstore.Store
}

func (e *etcdSpace) open(ctx context.Context, store, region int) (lease.Admin, error) {
	s, err := etcdstore.Connect(ctx, etcdstore.ClientConfig{Endpoints: e.svc.c.Endpoints()},
		etcdstore.Config{Prefix: e.prefixes[store], Region: region, RequestTimeout: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	e.stores = append(e.stores, s)
	return s, nil
}

func (e *etcdSpace) snapshot(ctx context.Context) error {
	if e.snap != "" {
		os.Remove(e.snap)
	}
	e.snap = e.svc.c.Snapshot(e.svc.t) // the whole cluster: every store of the space
	return nil
}

func (e *etcdSpace) restore(ctx context.Context, how restoreHow) (bool, error) {
	if e.snap == "" {
		return false, errors.New("explore: restore without a snapshot")
	}
	e.svc.c.Restore(e.svc.t, e.snap, etcdtest.RestoreOptions{NewClusterToken: how.newToken, RevisionBump: how.bump})
	// Every way of restoring must be noticed: the cluster ID changes, the
	// revision falls, or (bumped, same token) marks fall or vanish.
	return true, nil
}

func (e *etcdSpace) dropReplies(int) bool { return false }
func (e *etcdSpace) dropped() int         { return 0 }

func (e *etcdSpace) close() {
	for _, s := range e.stores {
		s.Close()
	}
	if e.snap != "" {
		os.Remove(e.snap)
	}
}

// --- PostgreSQL ------------------------------------------------------------

type pgService struct{ pool *pgxpool.Pool }

func (s *pgService) close() { s.pool.Close() }

func (s *pgService) space(ctx context.Context, seed uint64, stores int) (space, error) {
	p := &pgSpace{pool: s.pool}
	base := fmt.Sprintf("explore_%d_%s", seed, randomSuffix())
	for i := range stores {
		// A table of its own per store: its own <table>_region copy of the
		// registry, <table>_fleet record, and identity (the table's name
		// is part of it).
		table := fmt.Sprintf("%s_s%d", base, i)
		p.tables = append(p.tables, table)
		st, err := pgstore.New(s.pool, pgstore.Config{Table: table})
		if err != nil {
			return nil, err
		}
		if err := st.Migrate(ctx); err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

type pgSpace struct {
	pool     *pgxpool.Pool
	tables   []string // by store
	haveSnap bool
}

func (p *pgSpace) open(ctx context.Context, store, region int) (lease.Admin, error) {
	return pgstore.New(p.pool, pgstore.Config{Table: p.tables[store], Region: region})
}

// pgTables are the tables of a pgSpace a snapshot copies, with their
// copies: each store's lease table and its journal (<table>_claims), as a
// restore of the database brings both back to one moment.
func (p *pgSpace) pgTables() [][2]string {
	var ts [][2]string
	for _, t := range p.tables {
		ts = append(ts, [2]string{t, t + "_snap"}, [2]string{t + "_claims", t + "_snap_claims"})
	}
	return ts
}

// pgSuffixes are the tables pgstore's Migrate creates beside a lease table.
var pgSuffixes = []string{"", "_claims", "_fleet", "_origin", "_region", "_snap", "_snap_claims"}

func (p *pgSpace) snapshot(ctx context.Context) error {
	// One repeatable-read transaction: both tables as of one moment.
	err := pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		for _, ts := range p.pgTables() {
			t, s := pgx.Identifier{ts[0]}.Sanitize(), pgx.Identifier{ts[1]}.Sanitize()
			if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+s+"; CREATE TABLE "+s+" AS SELECT * FROM "+t); err != nil {
				return err
			}
		}
		return nil
	})
	p.haveSnap = err == nil
	return err
}

func (p *pgSpace) restore(ctx context.Context, _ restoreHow) (bool, error) {
	if !p.haveSnap {
		return false, errors.New("explore: restore without a snapshot")
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		for _, ts := range p.pgTables() {
			t, s := pgx.Identifier{ts[0]}.Sanitize(), pgx.Identifier{ts[1]}.Sanitize()
			if _, err := tx.Exec(ctx, "DELETE FROM "+t+"; INSERT INTO "+t+" SELECT * FROM "+s); err != nil {
				return err
			}
		}
		return nil
	})
	// Rows written back on the same server: nothing a store can see.
	return false, err
}

func (p *pgSpace) dropReplies(int) bool { return false }
func (p *pgSpace) dropped() int         { return 0 }

func (p *pgSpace) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, t := range p.tables {
		for _, suffix := range pgSuffixes {
			p.pool.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{t + suffix}.Sanitize())
		}
	}
}

// --- DynamoDB --------------------------------------------------------------

type dynamoService struct {
	upstream string
	shim     *dynashim.Shim
}

func (s *dynamoService) close() { s.shim.Close() }

// client returns a DynamoDB client of endpoint with test credentials.
func dynamoClient(ctx context.Context, endpoint string) (*dynamodb.Client, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion("us-east-1"),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) }), nil
}

func (s *dynamoService) space(ctx context.Context, seed uint64, stores int) (space, error) {
	raw, err := dynamoClient(ctx, s.upstream)
	if err != nil {
		return nil, err
	}
	d := &dynamoSpace{svc: s, raw: raw}
	d.droppedAt, _ = s.shim.Stats()
	base := fmt.Sprintf("explore-%d-%s", seed, randomSuffix())
	for i := range stores {
		// A table of its own per store: its registry item, fleet record
		// and identity (the table's ARN and ID) are apart.
		d.tables = append(d.tables, fmt.Sprintf("%s-s%d", base, i))
		st, err := d.open(ctx, i, 0)
		if err == nil {
			err = st.(*dynamostore.Store).CreateTable(ctx)
			st.Close()
		}
		if err != nil {
			d.close()
			return nil, err
		}
	}
	return d, nil
}

type dynamoSpace struct {
	svc       *dynamoService
	raw       *dynamodb.Client                    // straight to dynalite, for snapshots
	tables    []string                            // by store
	snap      [][]map[string]types.AttributeValue // per table of dynamoTables
	haveSnap  bool
	droppedAt int
}

func (d *dynamoSpace) open(ctx context.Context, store, region int) (lease.Admin, error) {
	return dynamostore.Connect(ctx, dynamostore.ClientConfig{
		Endpoint: d.svc.shim.URL(), AWSRegion: "us-east-1", AccessKeyID: "test", SecretAccessKey: "test",
	}, dynamostore.Config{Table: d.tables[store], Region: region, RequestTimeout: 2 * time.Second})
}

// dynamoTables are the tables of a dynamoSpace a snapshot copies, with
// their key attributes: each store's lease table and its journal table,
// restored together to one point in time as docs/lease-stores.md tells
// operators.
func (d *dynamoSpace) dynamoTables() []dynamoTable {
	var ts []dynamoTable
	for _, t := range d.tables {
		ts = append(ts, dynamoTable{t, []string{"machine_id"}}, dynamoTable{t + dynamostore.JournalTableSuffix, []string{"pk", "n"}})
	}
	return ts
}

// dynamoTable is a table and its key attributes.
type dynamoTable struct {
	name string
	keys []string
}

func (d *dynamoSpace) scanAll(ctx context.Context, table string) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(d.raw, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		items = append(items, out.Items...)
	}
	return items, nil
}

func (d *dynamoSpace) snapshot(ctx context.Context) error {
	// Table by table, as point-in-time restores are: the world is quiet
	// while a snapshot is taken (no claim runs between the two scans).
	d.snap, d.haveSnap = nil, false
	for _, t := range d.dynamoTables() {
		items, err := d.scanAll(ctx, t.name)
		if err != nil {
			return err
		}
		d.snap = append(d.snap, items)
	}
	d.haveSnap = true
	return nil
}

func (d *dynamoSpace) restore(ctx context.Context, _ restoreHow) (bool, error) {
	if !d.haveSnap {
		return false, errors.New("explore: restore without a snapshot")
	}
	for i, t := range d.dynamoTables() {
		now, err := d.scanAll(ctx, t.name)
		if err != nil {
			return false, err
		}
		for _, it := range now {
			key := map[string]types.AttributeValue{}
			for _, k := range t.keys {
				key[k] = it[k]
			}
			if _, err := d.raw.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(t.name), Key: key}); err != nil {
				return false, err
			}
		}
		for _, it := range d.snap[i] {
			if _, err := d.raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(t.name), Item: it}); err != nil {
				return false, err
			}
		}
	}
	// The same tables with older items: nothing a store can see.
	return false, nil
}

func (d *dynamoSpace) dropReplies(n int) bool {
	d.svc.shim.DropNextReplies(n)
	return true
}

func (d *dynamoSpace) dropped() int {
	n, _ := d.svc.shim.Stats()
	return n - d.droppedAt
}

func (d *dynamoSpace) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, t := range d.dynamoTables() {
		d.raw.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t.name)})
	}
}
