package publicid

import "fmt"

// MaxPrefixLen is the longest type prefix, as in the TypeID specification.
const MaxPrefixLen = 63

// CheckPrefix returns nil when prefix is a TypeID type prefix (see
// NewRandom; the empty prefix is one), and otherwise an error wrapping
// ErrInvalidPrefix that says why.
func CheckPrefix(prefix string) error {
	if why := checkPrefix(prefix); why != "" {
		return fmt.Errorf("%w: %q: %s", ErrInvalidPrefix, prefix, why)
	}
	return nil
}

// checkPrefix returns why prefix is not a TypeID type prefix, or "": at
// most MaxPrefixLen bytes of lower-case a–z and '_', starting and ending
// with a letter. The empty prefix is a valid TypeID prefix; callers that
// need one refuse it themselves.
func checkPrefix(prefix string) string {
	if len(prefix) > MaxPrefixLen {
		return fmt.Sprintf("the type prefix is %d characters; at most %d", len(prefix), MaxPrefixLen)
	}
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		switch {
		case 'a' <= c && c <= 'z':
		case c == '_':
			if i == 0 || i == len(prefix)-1 {
				return "the type prefix starts or ends with '_'; it must start and end with a letter a-z"
			}
		default:
			return fmt.Sprintf("the type prefix holds %q at offset %d; only lower-case a-z and '_' are allowed", c, i)
		}
	}
	return ""
}

// split cuts s at its last '_' into a type prefix and the rest; without a
// '_' the prefix is empty. A TypeID prefix may hold '_', its suffix never.
func split(s string) (prefix, suffix string, sep bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '_' {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}
