package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/lease/registry"
)

// Attribute names of a lease item.
const (
	attrMachine     = "machine_id"
	attrHolder      = "holder"
	attrExpiry      = "lease_expiry"
	attrEpoch       = "lease_epoch"
	attrQuarantined = "quarantined_mark"
	attrFloor       = "mark_floor"
	attrNonce       = "claim_nonce"
	attrRelNonce    = "release_nonce"
	attrRenewal     = "renewal"
)

// A Store keeps leases in one DynamoDB table for one region. It is safe for
// concurrent use, and any number of Store values (in any number of
// processes) may share a table. The only state it keeps between requests
// is what it needs to notice a point-in-time restore (restore.go), shared
// with the Store values Keyspace opened from it.
type Store struct {
	db     *dynamodb.Client
	table  string
	region int
	cfg    Config
	log    *slog.Logger
	closed atomic.Bool
	id     *identity
	// renewals are the renewal values this Store value wrote or sent for
	// its leases (lease.Renewals).
	renewals lease.Renewals
}

var (
	_ lease.Store    = (*Store)(nil)
	_ lease.Admin    = (*Store)(nil)
	_ registry.Store = (*Store)(nil)
)

// RegistryReader returns s: the store keeps its copy of the region
// registry and its fleet schedule record beside the leases.
func (s *Store) RegistryReader() lease.RegistryReader { return s }

// New returns a Store on client. The table must exist (CreateTable).
func New(client *dynamodb.Client, cfg Config) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: dynamostore: nil DynamoDB client", lease.ErrInvalid)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Store{db: client, table: cfg.Table, region: cfg.Region, cfg: cfg,
		log: cfg.Logger.With("table", cfg.Table, "region", cfg.Region), id: new(identity)}, nil
}

// Client returns the DynamoDB client the store uses.
func (s *Store) Client() *dynamodb.Client { return s.db }

// Close marks the store closed; later calls fail. The SDK client holds no
// connections that need closing, and the leases are not released.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

var errClosed = errors.New("dynamostore: store is closed")

func (s *Store) open() error {
	if s.closed.Load() {
		return errClosed
	}
	return nil
}

// CreateTable creates the lease table (on-demand billing, partition key
// machine_id N) and its journal table (Config.JournalTable: on-demand,
// partition key pk S, sort key n N), and waits until both are active. A
// table that already exists is not an error, so it also adds the journal
// table to a deployment made by a version without one.
func (s *Store) CreateTable(ctx context.Context) error {
	if err := s.createTable(ctx, s.table, []types.AttributeDefinition{
		{AttributeName: aws.String(attrMachine), AttributeType: types.ScalarAttributeTypeN},
	}, []types.KeySchemaElement{
		{AttributeName: aws.String(attrMachine), KeyType: types.KeyTypeHash},
	}); err != nil {
		return err
	}
	if err := s.createTable(ctx, s.cfg.JournalTable, []types.AttributeDefinition{
		{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String(jSeq), AttributeType: types.ScalarAttributeTypeN},
	}, []types.KeySchemaElement{
		{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
		{AttributeName: aws.String(jSeq), KeyType: types.KeyTypeRange},
	}); err != nil {
		return err
	}
	s.log.Info("lease table and journal table ready", "journal_table", s.cfg.JournalTable)
	return nil
}

// createTable creates one on-demand table unless it exists, and waits
// until it is active.
func (s *Store) createTable(ctx context.Context, name string, attrs []types.AttributeDefinition, key []types.KeySchemaElement) error {
	_, err := s.db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: attrs,
		KeySchema:            key,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamostore: create table %s: %w; check the credentials allow dynamodb:CreateTable, or create it by hand (docs/dynamodb-iam-policy.json, docs/lease-stores.md)", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(s.db, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, 2*time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
		return fmt.Errorf("dynamostore: table %s did not become active: %w", name, err)
	}
	return nil
}

// item is one machine number's item.
type item struct {
	exists      bool
	machine     int // within the region
	holder      string
	epoch       uint64
	expiryMs    int64
	quarantined bool
	preMarkMs   int64 // quarantined_mark
	hasPreMark  bool
	floorMs     int64  // mark_floor (0: none)
	nonce       string // claim_nonce: the attempt that made the last claim
	// releaseNonce is release_nonce: the attempt that made the last release.
	releaseNonce string
	hasEpoch     bool // lease_epoch present
	hasExpiry    bool // lease_expiry present
	// hasJournal says jcur is present; journal is it (journal.go).
	hasJournal bool
	journal    entry
	// renewal is the renewal value the holder's last renewal wrote
	// (lease.Renewals); absent, "", after a claim.
	renewal string
}

func (s *Store) key(n int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrMachine: num(int64(s.region*Machines + n))}
}

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func str(v string) types.AttributeValue {
	return &types.AttributeValueMemberS{Value: v}
}

func getNum(m map[string]types.AttributeValue, name string) (int64, bool, error) {
	v, ok := m[name]
	if !ok {
		return 0, false, nil
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, false, fmt.Errorf("dynamostore: attribute %s is %T, not a number: the table holds items this store did not write", name, v)
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("dynamostore: attribute %s = %q is not an integer: %w", name, n.Value, err)
	}
	return i, true, nil
}

// parseItem reads an item; a nil or empty map is a number with no item.
func (s *Store) parseItem(m map[string]types.AttributeValue) (item, error) {
	if len(m) == 0 {
		return item{}, nil
	}
	id, ok, err := getNum(m, attrMachine)
	if err != nil || !ok {
		return item{}, fmt.Errorf("dynamostore: item without a numeric machine_id: %v", err)
	}
	it := item{exists: true, machine: int(id) - s.region*Machines}
	if h, ok := m[attrHolder]; ok {
		hs, ok := h.(*types.AttributeValueMemberS)
		if !ok {
			return item{}, fmt.Errorf("dynamostore: machine_id %d: holder is %T, not a string", id, h)
		}
		it.holder = hs.Value
	}
	it.quarantined = it.holder == lease.QuarantineHolder
	ep, hasEpoch, err := getNum(m, attrEpoch)
	if err != nil {
		return item{}, err
	}
	if ep < 0 {
		return item{}, fmt.Errorf("dynamostore: machine_id %d: negative lease_epoch %d", id, ep)
	}
	it.epoch, it.hasEpoch = uint64(ep), hasEpoch
	if it.expiryMs, it.hasExpiry, err = getNum(m, attrExpiry); err != nil {
		return item{}, err
	}
	if it.preMarkMs, it.hasPreMark, err = getNum(m, attrQuarantined); err != nil {
		return item{}, err
	}
	if it.floorMs, _, err = getNum(m, attrFloor); err != nil {
		return item{}, err
	}
	if v, ok := m[attrNonce].(*types.AttributeValueMemberS); ok {
		it.nonce = v.Value
	}
	if v, ok := m[attrRelNonce].(*types.AttributeValueMemberS); ok {
		it.releaseNonce = v.Value
	}
	if v, ok := m[attrRenewal].(*types.AttributeValueMemberS); ok {
		it.renewal = v.Value
	}
	if err := s.parseJournalHead(&it, m); err != nil {
		return item{}, err
	}
	return it, nil
}

// record turns an item into the lease.Record callers see. A quarantined
// number shows holder "QUARANTINED", its 2100 expiry in ExpiresMs and, as
// its mark, the one it had before the quarantine (the mark it gets back on
// Unquarantine).
func (s *Store) record(n int, it item) lease.Record {
	r := lease.Record{Machine: n, Region: s.region}
	if !it.exists {
		return r
	}
	r.Token, r.MarkMs = it.epoch, it.expiryMs
	switch {
	case it.quarantined:
		r.Holder, r.Quarantined, r.ExpiresMs = it.holder, true, it.expiryMs
		if it.hasPreMark {
			r.MarkMs = it.preMarkMs
		}
	case it.holder != "":
		r.Holder, r.ExpiresMs, r.Claim, r.Renewal = it.holder, it.expiryMs, it.nonce, it.renewal
	}
	return r
}

// read is a consistent GetItem of number n.
func (s *Store) read(ctx context.Context, n int) (item, error) {
	m, err := s.readRaw(ctx, n)
	if err != nil {
		return item{}, err
	}
	return s.parseItem(m)
}

// readRaw is a consistent GetItem of number n's item as DynamoDB returns
// it (nil: no item).
func (s *Store) readRaw(ctx context.Context, n int) (map[string]types.AttributeValue, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            s.key(n),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("dynamostore: read machine %d: %w", n, err)
	}
	return out.Item, nil
}

// reread is read on a context of its own, for deciding after the caller's
// request failed (its context may be the one that ended).
func (s *Store) reread(n int) (item, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	return s.read(ctx, n)
}

// Get returns number machine's record (a zero record if it has no item),
// or lease.ErrRestored if the item shows the table went back in time since
// this Store value last saw it (signs.go).
func (s *Store) Get(ctx context.Context, machine int) (lease.Record, error) {
	if err := s.open(); err != nil {
		return lease.Record{}, err
	}
	if err := lease.CheckMachine(machine, Machines); err != nil {
		return lease.Record{}, err
	}
	sp := s.before(machine)
	it, err := s.read(ctx, machine)
	if err != nil {
		return lease.Record{}, err
	}
	if err := s.saw(sp, machine, it); err != nil {
		return lease.Record{}, err
	}
	return s.record(machine, it), nil
}

// List returns the record of every number of the region that has an item,
// in order, from a consistent scan; lease.ErrRestored instead if the items
// show the table went back in time (signs.go).
func (s *Store) List(ctx context.Context) ([]lease.Record, error) {
	if err := s.open(); err != nil {
		return nil, err
	}
	sp := s.id.watch.Before(s.region, 0, Machines-1)
	items, err := s.scan(ctx, lease.Range{Lo: 0, Hi: Machines - 1})
	if err != nil {
		return nil, err
	}
	if err := s.sawScan(sp, items); err != nil {
		return nil, err
	}
	recs := make([]lease.Record, 0, len(items))
	for _, it := range items {
		recs = append(recs, s.record(it.machine, it))
	}
	return recs, nil
}

// scan reads the items of numbers in r with a consistent, paginated scan,
// sorted by number. The table's own items (schedule, identity, registry:
// negative machine_ids) are never among them.
func (s *Store) scan(ctx context.Context, r lease.Range) ([]item, error) {
	items, _, err := s.scanWith(ctx, r, false)
	return items, err
}

// scanWith is scan that, with meta, also returns the table's own items
// the claim needs (the fleet schedule and the table identity; not the
// registry) by machine_id, read in the same consistent scan.
func (s *Store) scanWith(ctx context.Context, r lease.Range, meta bool) ([]item, map[int64]map[string]types.AttributeValue, error) {
	filter := "machine_id BETWEEN :lo AND :hi"
	vals := map[string]types.AttributeValue{
		":lo": num(int64(s.region*Machines + r.Lo)),
		":hi": num(int64(s.region*Machines + r.Hi)),
	}
	if meta {
		filter += " OR machine_id IN (:sched, :ident, :reg)"
		vals[":sched"], vals[":ident"], vals[":reg"] = num(scheduleKey), num(identityKey), num(registryKey)
	}
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(s.table),
		ConsistentRead:            aws.Bool(true),
		FilterExpression:          aws.String(filter),
		ExpressionAttributeValues: vals,
	}
	var items []item
	metas := map[int64]map[string]types.AttributeValue{}
	p := dynamodb.NewScanPaginator(s.db, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("dynamostore: scan table %s: %w", s.table, err)
		}
		for _, m := range out.Items {
			if id, ok, _ := getNum(m, attrMachine); ok && id < 0 {
				metas[id] = m
				continue
			}
			it, err := s.parseItem(m)
			if err != nil {
				return nil, nil, err
			}
			items = append(items, it)
		}
	}
	slices.SortFunc(items, func(a, b item) int { return a.machine - b.machine })
	return items, metas, nil
}

// conditionFailed reports whether err is a failed condition, and returns the
// item DynamoDB sent back with it, if any.
func conditionFailed(err error) (bool, map[string]types.AttributeValue) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return true, ccf.Item
	}
	return false, nil
}

// Table returns the lease table's name.
func (s *Store) Table() string { return s.table }

// JournalTable returns the journal table's name (Config.JournalTable).
func (s *Store) JournalTable() string { return s.cfg.JournalTable }

// RawKey is the item key of number n of the store's keyspace, as the AWS
// CLI's --key takes it: machine_id = keyspace × 1024 + n
// (lease.RawKeyer). ErrInvalid for n outside 0-1023.
func (s *Store) RawKey(n int) (lease.RawKey, error) {
	if n < 0 || n >= Machines {
		return lease.RawKey{}, fmt.Errorf("%w: machine number %d is outside 0-%d, the numbers a DynamoDB keyspace holds", lease.ErrInvalid, n, Machines-1)
	}
	id := s.key(n)[attrMachine].(*types.AttributeValueMemberN).Value
	return lease.RawKey{Store: "dynamodb", Keyspace: s.region, Machine: n, Table: s.table,
		Key: `{"` + attrMachine + `":{"N":"` + id + `"}}`}, nil
}
