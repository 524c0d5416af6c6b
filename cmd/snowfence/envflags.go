package main

import (
	"flag"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// envName is the environment variable that sets a flag: --etcd-endpoints is
// SNOWFENCE_ETCD_ENDPOINTS.
func envName(flagName string) string {
	return "SNOWFENCE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its
// SNOWFENCE_* variable, if set. A flag on the command line wins — also
// over the variable of an alias of it (--store and --lease-store set one
// value: SNOWFENCE_STORE must not override --lease-store, or a holder
// given one store on its command line would start on another). Two
// aliases' variables set to different values are refused.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[any]bool{}
	fs.Visit(func(f *flag.Flag) { given[valueKey(f)] = true })
	fromEnv := map[any]string{} // the variable that set a value, by valueKey
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		k := valueKey(f)
		if err != nil || given[k] {
			return
		}
		name := envName(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if other, ok := fromEnv[k]; ok {
			if w := getenv(other); w != v {
				err = usagef("%s=%q and %s=%q set one option (aliases) to two values: set one of them", other, w, name, v)
			}
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = usagef("%s=%q: %v", name, v, e)
			return
		}
		fromEnv[k] = name
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

// valueKey is what flags that are aliases share: the variable their Value
// points at (fs.StringVar and the like with one pointer). A Value that is
// not a pointer is its flag's own.
func valueKey(f *flag.Flag) any {
	if rv := reflect.ValueOf(f.Value); rv.Kind() == reflect.Pointer {
		return rv.Pointer()
	}
	return "flag:" + f.Name
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
