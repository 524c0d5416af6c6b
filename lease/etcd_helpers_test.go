package lease_test

import clientv3 "go.etcd.io/etcd/client/v3"

func leaseID(id int64) clientv3.LeaseID { return clientv3.LeaseID(id) }

func withLease(id clientv3.LeaseID) clientv3.OpOption { return clientv3.WithLease(id) }
