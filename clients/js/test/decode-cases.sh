#!/usr/bin/env bash
# Writes test/decode-cases.json: what `snowfence decode --json --schedule S ID`
# prints (or that it refuses) for a set of schedules and IDs, for
# decode.test.ts. Run from the repository root:
#   go build -o /tmp/snowfence ./cmd/snowfence && clients/js/test/decode-cases.sh /tmp/snowfence
set -euo pipefail
cli=$1
out=$(cd "$(dirname "$0")" && pwd)/decode-cases.json
schedules=(
	"v1" "v2" "v1,v2@2027-01-01T00:00:00Z" "" " " " v1 , v2@2027-01-01T00:00:00Z "
	"v2,v1@2031-03-01T09:30:00.001Z" "v1,v2@2031-03-01T09:30:00Z" "v1,v2@2027-01-01T00:00:00Z,v1@2028-01-01T00:00:00Z"
	"v1,v2@2027-01-01T00:00:00.5Z" "v1,v2@2027-01-01T01:00:00+01:00" "v1,v2@2027-01-01T00:00:00.0010000009Z"
	"v1,v2@2027-01-01T00:00:00+24:00" "v1,v2@2027-01-01T00:00:00+00:60" "v1,v2@2027-01-01T00:00:00-00:00"
	"v1,v2@2026-01-01T00:00:00.001Z" "v1,v2@9999-12-31T23:59:59Z" "v1,v2@2028-02-29T00:00:00Z" $'v1\u0085' $'\u2003v1'
	"v9" "V1" "v1," "v1,v2" "v1@2027-01-01T00:00:00Z" "v1,v2@2025-01-01T00:00:00Z" "v1,v2@2026-01-01T00:00:00Z"
	"v1,v2@2026-01-01T01:00:00+01:00" "v1,v2@2027-01-01T00:00:00.0001Z" "v1,v2@2027-01-01T00:00:00.1234567891Z"
	"v1,v2@2027-01-01t00:00:00Z" "v1,v2@2027-01-01T00:00:00z" "v1,v2@2027-01-01 00:00:00Z" "v1,v2@2027-02-29T00:00:00Z"
	"v1,v2@2027-02-30T00:00:00Z" "v1,v2@2027-01-01T24:00:00Z" "v1,v2@2027-01-01T00:00:60Z" "v1,v2@2027-01-01T00:60:00Z"
	"v1,v2@2027-00-01T00:00:00Z" "v1,v2@2027-13-01T00:00:00Z" "v1,v2@2027-01-00T00:00:00Z"
	"v1,v2@2027-01-01T00:00:00+25:00" "v1,v2@2027-01-01T00:00:00+00:61" "v1,v2@2027-01-01T00:00:00+0100"
	"v1,v2@2027-01-01T00:00:00.Z" "v1,v2@2027-01-01T00:00:00,5Z" "v1,v2@2027-1-01T00:00:00Z" "v1,v2@2027-01-01T00:00Z"
	"v1,v2@02027-01-01T00:00:00Z" "v1,v2@ 2027-01-01T00:00:00Z" "v1,v2 @2027-01-01T00:00:00Z" "v1,v2@2027-01-01T00:00:00Z@x"
	"v1,v2@2028-01-01T00:00:00Z,v1@2027-01-01T00:00:00Z" "v1,v2@2027-01-01T00:00:00Z,v2@2028-01-01T00:00:00Z"
	"v1,v2@2027-01-01T00:00:00Z,v1@2027-01-01T00:00:00Z" $'\ufeffv1'
)
ids=(0 1 4194304 683244571854022659 9223372036854775807 122737110268530688 4611686018427387904
	-1 9223372036854775808 12a 01 "" " 1" +1 99999999999999999999)
err=$(mktemp)
trap 'rm -f "$err"' EXIT
{
	echo "["
	first=1
	for s in "${schedules[@]}"; do
		for id in "${ids[@]}"; do
			if got=$("$cli" decode --json --schedule "$s" -- "$id" 2>"$err"); then
				line=$(jq -cn --arg s "$s" --arg id "$id" --argjson d "$got" '{schedule:$s,id:$id,decoded:$d}')
			else
				# Which input the CLI refused: its message names an invalid
				# ID, or an invalid layout (the schedule).
				what=other
				grep -q "invalid ID\|not a UUID\|invalid UUID" "$err" && what=id
				grep -q "invalid layout" "$err" && what=schedule
				line=$(jq -cn --arg s "$s" --arg id "$id" --arg w "$what" '{schedule:$s,id:$id,refused:$w}')
			fi
			[ $first = 1 ] || echo ","
			first=0
			printf '%s' "$line"
		done
	done
	echo
	echo "]"
} >"$out"
echo "wrote $out" >&2
