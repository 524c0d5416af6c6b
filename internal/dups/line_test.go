package dups

import (
	"bytes"
	"testing"

	"github.com/snowfence/snowfence"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		id   uint64
		kind LineKind
	}{
		{"plain", "97301141913751557", 97301141913751557, Decimal},
		{"zero", "0", 0, Decimal},
		{"max", "9223372036854775807", 1<<63 - 1, Decimal},
		{"crlf", "42\r", 42, Decimal},
		{"spaces and tabs", " \t42 \t\r", 42, Decimal},
		{"empty", "", 0, Blank},
		{"blank crlf", "\r", 0, Blank},
		{"blank spaces", "  \t ", 0, Blank},
		{"above max", "9223372036854775808", 0, Bad},
		{"twenty digits", "10000000000000000000", 0, Bad},
		{"leading zero", "042", 0, Bad},
		{"sign", "+42", 0, Bad},
		{"negative", "-42", 0, Bad},
		{"inner space", "4 2", 0, Bad},
		{"word", "id", 0, Bad},
		{"uuid", "01a0dd96-2600-802b-8d76-fc0012802b88", 0, Bad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, _, kind := ParseLine([]byte(tt.in))
			if id != tt.id || kind != tt.kind {
				t.Errorf("ParseLine(%q) = %d, %d; want %d, %d", tt.in, id, kind, tt.id, tt.kind)
			}
		})
	}
}

func TestParseUUIDForm(t *testing.T) {
	sched := snowfence.DefaultSchedule()
	id, ok := parseUUIDForm([]byte("01a0dd96-2600-802b-8d76-fc0012802b88"), sched)
	if !ok || id != 97301141913751557 {
		t.Errorf("UUIDv8 form: %d, %v; want 97301141913751557", id, ok)
	}
	for _, bad := range []string{"0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f", "01a0dd96-2600-802b-8d76-fc0012802b89", "x"} {
		if id, ok := parseUUIDForm([]byte(bad), sched); ok {
			t.Errorf("parseUUIDForm(%q) = %d, want refused", bad, id)
		}
	}
}

// FuzzParseLine checks the hand-written parser against snowfence.ParseID:
// after trimming, a line is an ID exactly when ParseID takes it, and the
// same ID.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"0", "42\r", " 97301141913751557\t", "9223372036854775807", "9223372036854775808", "042", "", "\r", "-1", "1e5", "１"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		id, trimmed, kind := ParseLine(line)
		want := bytes.Trim(bytes.TrimRight(line, "\r \t"), " \t")
		if !bytes.Equal(trimmed, want) {
			t.Fatalf("ParseLine(%q) trimmed to %q, want %q", line, trimmed, want)
		}
		ref, err := snowfence.ParseID(string(want))
		switch {
		case len(want) == 0:
			if kind != Blank {
				t.Fatalf("ParseLine(%q): kind %d, want Blank", line, kind)
			}
		case err != nil:
			if kind != Bad {
				t.Fatalf("ParseLine(%q) = %d, kind %d; ParseID refuses it: %v", line, id, kind, err)
			}
		default:
			if kind != Decimal || id != uint64(ref) {
				t.Fatalf("ParseLine(%q) = %d, kind %d; ParseID gives %d", line, id, kind, ref)
			}
		}
	})
}
