package lease

// A RawKey is where a store keeps one machine number's lease record, for
// an operator's command by hand (the runbook's raw playbooks): the number
// is stored under its keyspace (the region, or step × KeyspaceStride +
// region for a later layout step: KeyspaceOf), so a key written from the
// number alone reaches region 0's record, not the one meant. Take the key
// from the store (snowfence leases key), never compute it by hand.
type RawKey struct {
	// Store is the store's kind: "etcd", "postgres", "dynamodb" or
	// "zookeeper".
	Store string `json:"store"`
	// Keyspace and Machine are the number's keyspace and number.
	Keyspace int `json:"keyspace"`
	Machine  int `json:"machine"`
	// Table is the lease table (PostgreSQL, as the server resolves it
	// from the configuration; DynamoDB), empty for etcd.
	Table string `json:"table,omitempty"`
	// Key addresses the record in the store's own terms: etcd, the mark
	// key; PostgreSQL, the WHERE condition on the primary key (region =
	// K AND machine_id = N); DynamoDB, the item's key as the AWS CLI's
	// --key takes it ({"machine_id":{"N":"…"}}); ZooKeeper, the lease
	// znode's path.
	Key string `json:"key"`
	// Keys are every key of the number (etcd: owner, mark, quarantine;
	// ZooKeeper: the lease znode and the parent of its journal entries).
	Keys []string `json:"keys,omitempty"`
}

// A RawKeyer names the raw key of a number of its keyspace. etcdstore,
// pgstore, dynamostore and zkstore implement it; ErrInvalid for a number the store
// cannot address.
type RawKeyer interface {
	RawKey(machine int) (RawKey, error)
}
