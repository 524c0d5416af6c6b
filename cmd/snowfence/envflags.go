package main

import (
	"flag"
	"fmt"
	"sort"
	"strings"
)

// envName is the environment variable that sets a flag: --etcd-endpoints is
// SNOWFENCE_ETCD_ENDPOINTS.
func envName(flagName string) string {
	return "SNOWFENCE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its
// SNOWFENCE_* variable, if set. A flag on the command line wins.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = usagef("%s=%q: %v", envName(f.Name), v, e)
			}
		}
	})
	fs.VisitAll(func(f *flag.Flag) {
		if r, ok := f.Value.(environReader); ok {
			r.readEnviron(getenv)
		}
	})
	return err
}

// An environReader is a flag that reads a variable of its own beside its
// SNOWFENCE_* one (--kubeconfig reads kubectl's KUBECONFIG); applyEnv
// gives it the environment.
type environReader interface {
	readEnviron(getenv func(string) string)
}

// secretFlags are redacted when options are printed.
var secretFlags = map[string]bool{"etcd-password": true, "postgres-url": true, "zk-digest": true}

// describeFlags lists every flag's effective value, secrets redacted, for
// the start-up log.
func describeFlags(fs *flag.FlagSet) string {
	var parts []string
	fs.VisitAll(func(f *flag.Flag) {
		v := f.Value.String()
		if secretFlags[f.Name] && v != "" {
			v = "<redacted>"
		}
		parts = append(parts, fmt.Sprintf("%s=%s", f.Name, v))
	})
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
