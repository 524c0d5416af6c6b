//go:build snowfence_revert_tablerestore

package revert

// TableRestore is true: the fix is undone (see the package doc).
const TableRestore = true
