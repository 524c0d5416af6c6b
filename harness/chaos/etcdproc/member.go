package etcdproc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/snowfence/snowfence/internal/testkit/etcdmember"
)

// ReadyPrefix starts the one line MemberMain prints on stdout, followed by
// the member's client URL, once the member serves.
const ReadyPrefix = "ready "

// memberFlags are MemberMain's command line.
type memberFlags struct {
	name, dir, initialCluster, token, state string
	client, peer                            url.URL
	// heartbeatMs and electionMs override etcdmember's timing when set.
	heartbeatMs, electionMs uint
}

// parseMemberFlags parses and checks MemberMain's arguments.
func parseMemberFlags(args []string, stderr io.Writer) (memberFlags, error) {
	var f memberFlags
	var client, peer string
	fs := flag.NewFlagSet("etcdproc member", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.name, "name", "", "member name (required)")
	fs.StringVar(&f.dir, "dir", "", "data directory (required)")
	fs.StringVar(&client, "client-url", "", "client URL to listen on and advertise (required)")
	fs.StringVar(&peer, "peer-url", "", "peer URL to listen on and advertise (required)")
	fs.StringVar(&f.initialCluster, "initial-cluster", "", "name=peer-url,… of every member (required)")
	fs.StringVar(&f.token, "initial-cluster-token", "", "cluster token (required)")
	fs.StringVar(&f.state, "initial-cluster-state", embed.ClusterStateFlagNew, "new or existing")
	fs.UintVar(&f.heartbeatMs, "heartbeat-interval", 0, "raft heartbeat in milliseconds (0: etcdmember.TickMs)")
	fs.UintVar(&f.electionMs, "election-timeout", 0, "raft election timeout in milliseconds (0: etcdmember.ElectionMs)")
	if err := fs.Parse(args); err != nil {
		return f, fmt.Errorf("etcdproc: member flags: %w", err)
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("etcdproc: member flags: unexpected argument %q", fs.Arg(0))
	}
	for _, req := range []struct{ flag, value string }{
		{"name", f.name}, {"dir", f.dir}, {"client-url", client}, {"peer-url", peer},
		{"initial-cluster", f.initialCluster}, {"initial-cluster-token", f.token},
	} {
		if req.value == "" {
			return f, fmt.Errorf("etcdproc: member flags: --%s is required", req.flag)
		}
	}
	if f.state != embed.ClusterStateFlagNew && f.state != embed.ClusterStateFlagExisting {
		return f, fmt.Errorf("etcdproc: member flags: --initial-cluster-state is %q, want new or existing", f.state)
	}
	for _, u := range []struct {
		flag, value string
		dst         *url.URL
	}{{"client-url", client, &f.client}, {"peer-url", peer, &f.peer}} {
		p, err := url.Parse(u.value)
		if err != nil || p.Scheme != "http" || p.Host == "" {
			return f, fmt.Errorf("etcdproc: member flags: --%s is %q, want http://host:port", u.flag, u.value)
		}
		*u.dst = *p
	}
	return f, nil
}

// config builds the embedded server's configuration; its logger writes
// errors, tagged with the member's name, to stderr.
func (f memberFlags) config(stderr io.Writer) *embed.Config {
	core := zapcore.NewCore(
		zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.Lock(zapcore.AddSync(stderr)),
		zap.ErrorLevel,
	)
	m := etcdmember.Member{Name: f.name, Dir: f.dir, Client: f.client, Peer: f.peer}
	cfg := etcdmember.Config(m, f.initialCluster, f.token, f.state, zap.New(core).With(zap.String("member", f.name)))
	if f.heartbeatMs > 0 {
		cfg.TickMs = f.heartbeatMs
	}
	if f.electionMs > 0 {
		cfg.ElectionMs = f.electionMs
	}
	return cfg
}

// MemberMain runs one etcd member in this process until ctx ends (the
// process's SIGTERM, say), when it stops the member and returns nil, or
// until etcd fails, when it returns why.
//
// Its flags are --name, --dir (data directory), --client-url and --peer-url
// (http URLs it listens on and advertises), --initial-cluster
// (name=peer-url,… of every member), --initial-cluster-token and
// --initial-cluster-state (new, the default, or existing; etcd ignores the
// initial-cluster flags when dir already holds a member), and optionally
// --heartbeat-interval and --election-timeout in milliseconds, as etcd
// spells them (the package's Timing when absent).
//
// Once the member serves (etcd's ReadyNotify) it prints exactly one line on
// stdout, [ReadyPrefix] followed by the client URL, and nothing else ever;
// etcd's error log goes to stderr.
func MemberMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseMemberFlags(args, stderr)
	if err != nil {
		return err
	}
	e, err := embed.StartEtcd(f.config(stderr))
	if err != nil {
		return fmt.Errorf("etcdproc: member %s: start etcd: %w", f.name, err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return fmt.Errorf("etcdproc: member %s: etcd failed before it was ready: %w", f.name, err)
	case <-e.Server.StopNotify():
		return fmt.Errorf("etcdproc: member %s: etcd stopped before it was ready", f.name)
	case <-ctx.Done():
		return nil
	}
	if _, err := fmt.Fprintln(stdout, ReadyPrefix+f.client.String()); err != nil {
		return fmt.Errorf("etcdproc: member %s: report ready: %w", f.name, err)
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-e.Err():
		if err == nil {
			err = errors.New("error channel closed")
		}
		return fmt.Errorf("etcdproc: member %s: etcd failed: %w", f.name, err)
	case <-e.Server.StopNotify():
		return fmt.Errorf("etcdproc: member %s: etcd stopped", f.name)
	}
}
