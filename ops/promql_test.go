package ops

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// A selector is a metric name and its label matchers, as a PromQL
// expression or a promtool input series writes it.
type selector struct {
	name     string
	matchers []matcher
}

type matcher struct{ label, op, value string }

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isIdent(c byte) bool { return isIdentStart(c) || '0' <= c && c <= '9' }

// lexer walks a PromQL expression; it knows just enough of the language
// to find the metric selectors in the rules and panels of this folder.
type lexer struct {
	s string
	i int
}

func (l *lexer) space() {
	for l.i < len(l.s) && strings.IndexByte(" \t\r\n", l.s[l.i]) >= 0 {
		l.i++
	}
}

func (l *lexer) ident() string {
	j := l.i
	for l.i < len(l.s) && isIdent(l.s[l.i]) {
		l.i++
	}
	return l.s[j:l.i]
}

// str reads a quoted string at l.i.
func (l *lexer) str() (string, error) {
	q := l.s[l.i]
	j := l.i + 1
	for ; j < len(l.s) && l.s[j] != q; j++ {
		if l.s[j] == '\\' {
			j++
		}
	}
	if j >= len(l.s) {
		return "", fmt.Errorf("unterminated string at %d in %q", l.i, l.s)
	}
	raw := l.s[l.i : j+1]
	l.i = j + 1
	if q == '`' {
		return raw[1 : len(raw)-1], nil
	}
	if q == '\'' {
		raw = `"` + strings.ReplaceAll(raw[1:len(raw)-1], `"`, `\"`) + `"`
	}
	return strconv.Unquote(raw)
}

// skipPast moves l.i past the bracket closing the one at l.i.
func (l *lexer) skipPast(open, close byte) error {
	depth := 0
	for l.i < len(l.s) {
		switch c := l.s[l.i]; {
		case c == '"' || c == '\'' || c == '`':
			if _, err := l.str(); err != nil {
				return err
			}
			continue
		case c == open:
			depth++
		case c == close:
			depth--
			if depth == 0 {
				l.i++
				return nil
			}
		}
		l.i++
	}
	return fmt.Errorf("unclosed %c in %q", open, l.s)
}

// matchers reads {label op "value", …} at l.i.
func (l *lexer) matchers() ([]matcher, error) {
	l.i++ // {
	var ms []matcher
	for {
		l.space()
		if l.i < len(l.s) && l.s[l.i] == '}' {
			l.i++
			return ms, nil
		}
		if l.i >= len(l.s) || !isIdentStart(l.s[l.i]) {
			return nil, fmt.Errorf("want a label name at %d in %q", l.i, l.s)
		}
		m := matcher{label: l.ident()}
		l.space()
		for _, op := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(l.s[l.i:], op) {
				m.op = op
				break
			}
		}
		if m.op == "" {
			return nil, fmt.Errorf("want a matcher operator at %d in %q", l.i, l.s)
		}
		l.i += len(m.op)
		l.space()
		if l.i >= len(l.s) || strings.IndexByte("\"'`", l.s[l.i]) < 0 {
			return nil, fmt.Errorf("want a quoted value at %d in %q", l.i, l.s)
		}
		v, err := l.str()
		if err != nil {
			return nil, err
		}
		m.value = v
		ms = append(ms, m)
		l.space()
		if l.i < len(l.s) && l.s[l.i] == ',' {
			l.i++
		}
	}
}

// Keywords of PromQL: the first group takes a parenthesised list of label
// names, which are not metrics; the aggregations may have such a list
// between their name and their argument.
var (
	labelListKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	otherKeywords     = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true, "atan2": true,
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "count": true, "count_values": true, "stddev": true, "stdvar": true,
		"topk": true, "bottomk": true, "quantile": true, "limitk": true, "limit_ratio": true}
)

// selectors returns the metric selectors of a PromQL expression.
func selectors(expr string) ([]selector, error) {
	l := &lexer{s: expr}
	var out []selector
	for {
		l.space()
		if l.i >= len(l.s) {
			return out, nil
		}
		c := l.s[l.i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			if _, err := l.str(); err != nil {
				return nil, err
			}
		case c == '[':
			if err := l.skipPast('[', ']'); err != nil {
				return nil, err
			}
		case c == '{':
			return nil, fmt.Errorf("a selector without a metric name at %d in %q", l.i, expr)
		case '0' <= c && c <= '9' || c == '.':
			for l.i < len(l.s) && (isIdent(l.s[l.i]) || l.s[l.i] == '.') {
				l.i++
			}
		case isIdentStart(c):
			name := l.ident()
			l.space()
			next := byte(0)
			if l.i < len(l.s) {
				next = l.s[l.i]
			}
			switch {
			case labelListKeywords[strings.ToLower(name)]:
				if next == '(' {
					if err := l.skipPast('(', ')'); err != nil {
						return nil, err
					}
				}
			case otherKeywords[strings.ToLower(name)], next == '(':
				// a keyword or a function
			case next == '{':
				ms, err := l.matchers()
				if err != nil {
					return nil, err
				}
				out = append(out, selector{name, ms})
			default:
				out = append(out, selector{name: name})
			}
		default:
			l.i++
		}
	}
}

// parseSelector reads one series: name{label="value", …}.
func parseSelector(s string) (selector, error) {
	l := &lexer{s: strings.TrimSpace(s)}
	if l.s == "" || !isIdentStart(l.s[0]) {
		return selector{}, fmt.Errorf("%q does not start with a metric name", s)
	}
	sel := selector{name: l.ident()}
	l.space()
	if l.i < len(l.s) && l.s[l.i] == '{' {
		ms, err := l.matchers()
		if err != nil {
			return selector{}, err
		}
		sel.matchers = ms
	}
	l.space()
	if l.i != len(l.s) {
		return selector{}, fmt.Errorf("%q has more after its selector", s)
	}
	return sel, nil
}

// alternatives splits a regular expression made only of literals joined
// by | into them; false if it is anything else.
func alternatives(re string) ([]string, bool) {
	parts := strings.Split(re, "|")
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, `\.+*?()[]{}^$`) {
			return nil, false
		}
	}
	return parts, true
}

func quote(s string) string { return strconv.Quote(s) }

func TestSelectors(t *testing.T) {
	for _, c := range []struct {
		expr string
		want string
	}{
		{`rate(a_total[5m]) > 0`, `a_total`},
		{`sum by (instance, state) (b{state="x", job=~"$job"}) and ignoring (state) c == 1`, `b{state="x",job=~"$job"} c`},
		{`histogram_quantile(0.99, sum by (le) (rate(d_bucket{endpoint=~"/v1/ids|/v1/ids:batch"}[$__rate_interval])))`, `d_bucket{endpoint=~"/v1/ids|/v1/ids:batch"}`},
		{`min without (instance) (e - time() < f) offset 5m`, `e f`},
		{`g{reason!="a b}"} unless on() h{x='y'}`, `g{reason!="a b}"} h{x="y"}`},
		{`1 - min(i) * 2e3 + 0.5`, `i`},
	} {
		sels, err := selectors(c.expr)
		if err != nil {
			t.Errorf("selectors(%q): %v", c.expr, err)
			continue
		}
		var got []string
		for _, s := range sels {
			txt := s.name
			if len(s.matchers) > 0 {
				var ms []string
				for _, m := range s.matchers {
					ms = append(ms, m.label+m.op+quote(m.value))
				}
				txt += "{" + strings.Join(ms, ",") + "}"
			}
			got = append(got, txt)
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("selectors(%q) = %s, want %s", c.expr, g, c.want)
		}
	}
	if _, err := selectors(`a{b="c"`); err == nil {
		t.Error(`selectors("a{b=\"c\""): no error for an unclosed selector`)
	}
}
