//go:build !snowfence_revert_tablerestore

package revert

// TableRestore is false: the fix is in force (see the package doc).
const TableRestore = false
