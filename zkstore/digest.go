package zkstore

import "github.com/go-zookeeper/zk"

// WithDigest returns cfg for a fleet that shares one set of digest
// credentials: every znode the store creates gets an ACL giving user every
// permission and nobody else any (zk.DigestACL(zk.PermAll, user,
// password)), replacing cfg.ACL, and the session authenticates as user
// (the "digest" scheme, "user:password", added to cfg.Auth). It is what
// "snowfence serve --zk-digest" configures.
//
// An ACL is set when a znode is created: znodes that exist already keep
// theirs. Give the credentials from the first holder on, or set the ACL of
// the existing znodes with ZooKeeper's setAcl.
func (cfg Config) WithDigest(user, password string) Config {
	cfg.ACL = zk.DigestACL(zk.PermAll, user, password)
	cfg.Auth = append(cfg.Auth[:len(cfg.Auth):len(cfg.Auth)], Auth{Scheme: "digest", Secret: []byte(user + ":" + password)})
	return cfg
}
