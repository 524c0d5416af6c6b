package oracle

import "encoding/binary"

// batch is the unit of one COPY: IDs and their sources, in the order
// received.
type batch struct {
	seq  int64 // the batch's number, from 1
	ids  []int64
	srcs []int32
}

// len returns how many IDs b holds.
func (b *batch) len() int { return len(b.ids) }

// add appends ids to b.
func (b *batch) add(ids []Issued) {
	for _, x := range ids {
		b.ids = append(b.ids, x.ID)
		b.srcs = append(b.srcs, x.Source)
	}
}

// reset empties b for reuse as batch number seq.
func (b *batch) reset(seq int64) {
	b.seq = seq
	b.ids = b.ids[:0]
	b.srcs = b.srcs[:0]
}

// copyHeader starts PostgreSQL's binary COPY format: the signature, the
// flags field and the header-extension length.
const copyHeader = "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

// appendCopy appends b in binary COPY format to buf: rows (id, source), or
// (seq, id, source) with staged, where seq is the row's index in b.
func (b *batch) appendCopy(buf []byte, staged bool) []byte {
	be := binary.BigEndian
	buf = append(buf, copyHeader...)
	for i, id := range b.ids {
		if staged {
			buf = be.AppendUint16(buf, 3)
			buf = be.AppendUint32(buf, 4)
			buf = be.AppendUint32(buf, uint32(i))
		} else {
			buf = be.AppendUint16(buf, 2)
		}
		buf = be.AppendUint32(buf, 8)
		buf = be.AppendUint64(buf, uint64(id))
		buf = be.AppendUint32(buf, 4)
		buf = be.AppendUint32(buf, uint32(b.srcs[i]))
	}
	return be.AppendUint16(buf, 0xffff) // the trailer: field count −1
}

// copySQL is the COPY statement that reads appendCopy's format.
func copySQL(table string, staged bool) string {
	if staged {
		return "COPY " + stageTable + " (seq, id, source) FROM STDIN (FORMAT binary)"
	}
	return "COPY " + table + " (id, source) FROM STDIN (FORMAT binary)"
}
