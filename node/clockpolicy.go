package node

import (
	"log/slog"

	"github.com/snowfence/snowfence"
)

// EmbeddedClockNote is what a holder on the embedded etcd logs at start
// when its generator sets no clock policy and so takes warn.
const EmbeddedClockNote = "clock policy warn, the embedded etcd's default: its numbers are leased on this host only, " +
	"where the order of IDs across hosts means nothing, so an unsynchronised, inaccurate or jumped clock is reported " +
	"(/healthz warnings, metrics) but does not stop issuing; with a shared store (an etcd cluster, PostgreSQL, DynamoDB, ZooKeeper, Kubernetes) " +
	"the default is require, which refuses (set --clock-policy require to refuse here too)"

// EmbeddedClockDefault gives gc, the generator configuration of a holder
// on the embedded etcd, clock policy warn if it sets none, and logs
// EmbeddedClockNote. Every other holder keeps the generator's zero value,
// snowfence.ClockRequire: its store is shared by hosts whose IDs are
// ordered against each other, or may be (a store passed in as
// Config.Store is taken to be shared). Launch calls it when it starts the
// embedded etcd; an owner that opens the embedded etcd itself and passes
// its store in (package service) calls it too.
func EmbeddedClockDefault(gc *snowfence.Config, log *slog.Logger) {
	if gc.ClockPolicy != "" {
		return
	}
	gc.ClockPolicy = snowfence.ClockWarn
	log.Warn(EmbeddedClockNote)
}
