package k8sproc

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Revision is the API server's etcd's current revision, which is the
// resourceVersion the next write of any object gets less one: a restore
// without --bump-revision takes it back, and the writes after it are given
// resourceVersions already issued.
func (s *Server) Revision(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: s.etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(), Context: ctx})
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "k8sproc/revision") // any key: the header carries the store's revision
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}
