package lease

import (
	"fmt"
	"strings"
)

// ParseRanges reads the machine ranges of a holder class as "serve
// --machines" takes them: "lo-hi" for every layout, "layout=lo-hi" for one
// layout by name, comma-separated, at most one without a name — such as
// "600-699,v2=0-99" across a cutover from v1 to v2. It returns what
// KeeperConfig.Range and LayoutRanges take; the empty string gives nil for
// both (each layout's whole range).
func ParseRanges(s string) (*Range, map[string]Range, error) {
	var all *Range
	var per map[string]Range
	if strings.TrimSpace(s) == "" {
		return nil, nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, text, named := strings.Cut(strings.TrimSpace(part), "=")
		if !named {
			text = name
		}
		r, err := ParseRange(text)
		if err != nil {
			return nil, nil, err
		}
		switch _, dup := per[name]; {
		case !named && all != nil:
			return nil, nil, fmt.Errorf("%w: machine ranges %q: one range without a layout name at most (write layout=lo-hi for the others)", ErrInvalid, s)
		case !named:
			all = &r
		case name == "" || dup:
			return nil, nil, fmt.Errorf("%w: machine ranges %q: every layout=lo-hi needs a layout name, once", ErrInvalid, s)
		default:
			if per == nil {
				per = map[string]Range{}
			}
			per[name] = r
		}
	}
	return all, per, nil
}
