package main

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/snowfence/snowfence/etcdstore"
	"github.com/snowfence/snowfence/k8sstore"
	"github.com/snowfence/snowfence/lease"
	"github.com/snowfence/snowfence/pgstore"
	"github.com/snowfence/snowfence/zkstore"
)

// copySpecHelp describes the forms of --copy SPEC.
const copySpecHelp = `  etcd://[USER:PASSWORD@]HOST:PORT[,HOST:PORT…][/PREFIX]   an etcd cluster (PREFIX default /snowfence)
  etcds://…                                               the same over TLS, with --etcd-ca, --etcd-cert, --etcd-key
  postgres://USER:PASSWORD@HOST:PORT/DB[?table=TABLE]     a PostgreSQL lease table (default table ` + pgstore.DefaultTable + `)
  dynamodb://TABLE?aws-region=REGION[&endpoint=URL]       a DynamoDB lease table (credentials: the AWS SDK's chain);
                                                          the region is required, as --aws-region is for copy 1
  zookeeper://[USER:PASSWORD@]HOST:PORT[,HOST:PORT…][/PATH]
                                                          a ZooKeeper ensemble (PATH default ` + zkstore.DefaultPath + `; USER:PASSWORD
                                                          its digest credentials, as --zk-digest)
  kubernetes://NAMESPACE[/PREFIX][?context=CONTEXT]       Lease objects in a cluster's namespace (PREFIX default ` + k8sstore.DefaultPrefix + `), through
                                                          --kubeconfig (or KUBECONFIG) and its CONTEXT (default: the current one)`

// parseCopySpec reads a --copy SPEC into the store flags that open it;
// base gives the etcd TLS files and the dial timeout.
func parseCopySpec(spec string, base storeFlags) (storeFlags, error) {
	scheme, rest, ok := strings.Cut(spec, "://")
	f := storeFlags{dialTimeout: base.dialTimeout, prefix: etcdstore.DefaultPrefix}
	bad := func(format string, args ...any) (storeFlags, error) {
		return f, usagef("--copy %s: %s; the forms are:\n%s", redactSpec(spec), fmt.Sprintf(format, args...), copySpecHelp)
	}
	if !ok {
		return bad("not a URL")
	}
	switch scheme {
	case "etcd", "etcds":
		f.kind = "etcd"
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			user, pass, _ := strings.Cut(rest[:at], ":")
			var err1, err2 error
			f.username, err1 = url.PathUnescape(user)
			f.password, err2 = url.PathUnescape(pass)
			if err1 != nil || err2 != nil || f.username == "" {
				return bad("the user before @ is not USER:PASSWORD")
			}
			rest = rest[at+1:]
		}
		hosts, path, _ := strings.Cut(rest, "/")
		if path = strings.TrimSuffix(path, "/"); path != "" {
			f.prefix = "/" + path
		}
		proto := "http://"
		if scheme == "etcds" {
			proto = "https://"
			f.cert, f.key, f.ca = base.cert, base.key, base.ca
		}
		var eps []string
		for _, h := range strings.Split(hosts, ",") {
			if h = strings.TrimSpace(h); h == "" || strings.ContainsAny(h, "?#") {
				return bad("%q is not HOST:PORT", h)
			}
			eps = append(eps, proto+h)
		}
		f.endpoints = strings.Join(eps, ",")
	case "postgres", "postgresql":
		u, err := url.Parse(spec)
		if err != nil {
			return bad("%v", redactErr(err, spec))
		}
		q := u.Query()
		f.kind, f.postgresTable = "postgres", pgstore.DefaultTable
		if t := q.Get("table"); t != "" {
			f.postgresTable = t
		}
		q.Del("table")
		u.RawQuery = q.Encode()
		f.postgresURL = u.String()
	case "dynamodb":
		u, err := url.Parse(spec)
		if err != nil {
			return bad("%v", err)
		}
		f.kind, f.dynamoTable = "dynamodb", u.Host
		if f.dynamoTable == "" {
			return bad("no table: write dynamodb://TABLE")
		}
		q := u.Query()
		f.awsRegion, f.dynamoEndpoint = q.Get("aws-region"), q.Get("endpoint")
		for k := range q {
			if k != "aws-region" && k != "endpoint" {
				return bad("unknown parameter %q (aws-region and endpoint are)", k)
			}
		}
	case "zookeeper":
		f.kind, f.zkPath, f.zkSessionTimeout = "zookeeper", zkstore.DefaultPath, cmp.Or(base.zkSessionTimeout, 10*time.Second)
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			user, pass, _ := strings.Cut(rest[:at], ":")
			u, err1 := url.PathUnescape(user)
			p, err2 := url.PathUnescape(pass)
			if err1 != nil || err2 != nil || u == "" || p == "" {
				return bad("the digest before @ is not USER:PASSWORD")
			}
			f.zkDigest = u + ":" + p
			rest = rest[at+1:]
		}
		hosts, path, _ := strings.Cut(rest, "/")
		if path = strings.TrimSuffix(path, "/"); path != "" {
			f.zkPath = "/" + path
		}
		for _, h := range strings.Split(hosts, ",") {
			if h = strings.TrimSpace(h); h == "" || strings.ContainsAny(h, "?#") {
				return bad("%q is not HOST:PORT", h)
			}
		}
		f.zkServers = hosts
	case "kubernetes":
		u, err := url.Parse(spec)
		if err != nil {
			return bad("%v", err)
		}
		f.kind = "kubernetes"
		f.k8s = k8sFlags{namespace: u.Host, prefix: strings.Trim(u.Path, "/"), kubeconfig: base.k8s.kubeconfig}
		if f.k8s.namespace == "" || u.User != nil || u.Port() != "" {
			return bad("no namespace: write kubernetes://NAMESPACE")
		}
		if strings.Contains(f.k8s.prefix, "/") {
			return bad("prefix %q: one name, no /", f.k8s.prefix)
		}
		q := u.Query()
		f.k8s.context = q.Get("context")
		for k := range q {
			if k != "context" {
				return bad("unknown parameter %q (context is)", k)
			}
		}
	default:
		return bad("unknown scheme %q", scheme)
	}
	return f, nil
}

// redactSpec hides the password of a SPEC, for messages.
func redactSpec(spec string) string {
	scheme, rest, ok := strings.Cut(spec, "://")
	if !ok {
		return spec
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return spec
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return spec
	}
	return scheme + "://" + user + ":xxxxx@" + rest[at+1:]
}

// redactErr is err with the SPEC's text replaced by its redacted form.
func redactErr(err error, spec string) string {
	return strings.ReplaceAll(err.Error(), spec, redactSpec(spec))
}

// A registryCopy is one copy of the region registry: a store, opened.
type registryCopy struct {
	name  string // as the operator named it, password hidden
	store lease.Admin
}

// openCopies opens the store of the store flags (copy 1) and of every
// --copy SPEC, in order; the caller closes them (closeCopies), also on
// error.
func openCopies(ctx context.Context, first storeFlags, specs []string) ([]registryCopy, error) {
	var cs []registryCopy
	add := func(name string, f storeFlags) error {
		f.region = 0 // the registry is one per store, beside every region's leases
		if err := f.check(); err != nil {
			return err
		}

		s, err := f.connectRegion(ctx)
		if err != nil {
			return fmt.Errorf("copy %d (%s): %w", len(cs)+1, name, err)
		}
		cs = append(cs, registryCopy{name: name, store: s})
		return nil
	}
	more := make([]storeFlags, len(specs))
	for i, spec := range specs { // every SPEC read before any store is opened
		f, err := parseCopySpec(spec, first)
		if err != nil {
			return nil, err
		}
		more[i] = f
	}
	for i, f := range append([]storeFlags{first}, more...) {
		if f.kind == "dynamodb" && f.awsRegion == "" {
			// The registry records copies by name; a name that leaves the
			// AWS region to the environment means another table on a host
			// with another AWS_REGION, and two tables under one name can
			// both take a change (one region number for two regions).
			return nil, usagef("copy %d: name its AWS region (--aws-region, or ?aws-region= in --copy): the registry records each copy by name, and without it the name means a different table on a host with another AWS_REGION", i+1)
		}
	}
	if err := add(first.describe(), first); err != nil {
		return cs, err
	}
	for i, f := range more {
		if err := add(redactSpec(specs[i]), f); err != nil {
			return cs, err
		}
	}
	return cs, nil
}

// closeCopies closes the stores of copies.
func closeCopies(cs []registryCopy) {
	for _, c := range cs {
		c.store.Close()
	}
}

// describe names the store the flags choose, without secrets.
func (f *storeFlags) describe() string {
	switch f.kind {
	case "postgres":
		if u, err := url.Parse(f.postgresURL); err == nil {
			u.User = nil
			return fmt.Sprintf("postgres %s table %s", u, f.postgresTable)
		}
		return "postgres table " + f.postgresTable
	case "zookeeper":
		return fmt.Sprintf("zookeeper %s, path %s", strings.Join(f.zkServerList(), ","), f.zkPath)
	case "kubernetes":
		return f.k8s.describe()
	case "dynamodb":
		d := fmt.Sprintf("dynamodb table %s in %s", f.dynamoTable, f.awsRegion)
		if f.dynamoEndpoint != "" {
			d += " at " + f.dynamoEndpoint
		}
		return d
	}
	if f.endpoints == "" {
		return fmt.Sprintf("the embedded etcd of %s, prefix %s", f.dataDir, f.prefix)
	}
	return fmt.Sprintf("etcd %s, prefix %s", f.endpoints, f.prefix)
}
