module github.com/snowfence/snowfence/bench

go 1.26.0

replace github.com/snowfence/snowfence => ../

require (
	github.com/bwmarrin/snowflake v0.3.0
	github.com/snowfence/snowfence v0.0.0-00010101000000-000000000000
	github.com/sony/sonyflake/v2 v2.2.0
)

require golang.org/x/sys v0.50.0 // indirect
