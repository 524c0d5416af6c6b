module github.com/snowfence/snowfence/bench

go 1.26.0

replace github.com/snowfence/snowfence => ../

require (
	github.com/bwmarrin/snowflake v0.3.0
	github.com/snowfence/snowfence v0.0.0-00010101000000-000000000000
	github.com/sony/sonyflake/v2 v2.2.0
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da // indirect
	golang.org/x/sys v0.50.0 // indirect
)

tool golang.org/x/perf/cmd/benchstat
