// Package bench measures snowfence's minting loop side by side with its
// peers, github.com/bwmarrin/snowflake and github.com/sony/sonyflake/v2, on
// the same machine in the same run. It is a module of its own so users of
// snowfence do not inherit the peers as dependencies.
//
// Run it with bench/run.sh (go test -bench, -count 10, then benchstat).
package bench
