package zktest

import (
	"os"
	"path/filepath"
	"strings"
)

// txnHeaderSize is the size of a ZooKeeper transaction log's file header
// (magic, version, database id).
const txnHeaderSize = 16

// dropHeaderlessLogs removes from dataDir the transaction log files
// shorter than their header: a server stopped or killed just after it
// created a log file for a transaction, before it wrote the header (the
// transaction was never acknowledged: it is written, header first, and
// flushed before the reply). ZooKeeper 3.8 will not start on such a file
// (java.io.EOFException in FileHeader.deserialize) — an operator deletes
// it — and the tests stop servers at any moment. It returns the files
// removed.
func dropHeaderlessLogs(dataDir string) ([]string, error) {
	logs, err := filepath.Glob(filepath.Join(dataDir, "version-2", "log.*"))
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, p := range logs {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() >= txnHeaderSize || strings.HasSuffix(p, ".tmp") {
			continue
		}
		if err := os.Remove(p); err != nil {
			return dropped, err
		}
		dropped = append(dropped, p)
	}
	return dropped, nil
}
