package oracle

// orderCheck counts IDs that do not increase over their source's previous
// ID. The last source's entry is cached, since a caller's slice usually
// holds runs of one source.
type orderCheck struct {
	last        map[int32]int64 // source → its latest ID, except cur's
	cur         int32           // the cached source, valid when have
	curLast     int64           // cur's latest ID
	have        bool
	regressions int64
	examples    []Regression
}

// check checks ids, in order, against what came before.
func (c *orderCheck) check(ids []Issued) {
	for _, x := range ids {
		if !c.have || x.Source != c.cur {
			c.swap(x.Source)
		}
		if c.have && x.ID <= c.curLast {
			c.regressions++
			if len(c.examples) < MaxExamples {
				c.examples = append(c.examples, Regression{Source: x.Source, Prev: c.curLast, ID: x.ID})
			}
		}
		c.cur, c.curLast, c.have = x.Source, x.ID, true
	}
}

// swap stores the cached source's latest ID and loads src's; c.have
// reports whether src was seen before.
func (c *orderCheck) swap(src int32) {
	if c.last == nil {
		c.last = make(map[int32]int64)
	}
	if c.have {
		c.last[c.cur] = c.curLast
	}
	c.cur = src
	c.curLast, c.have = c.last[src]
}
