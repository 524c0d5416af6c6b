package publicid

import (
	"fmt"
	"log/slog"
	"strings"
)

// redacted stands in for key material wherever a key or keyset is
// printed.
const redacted = "[redacted]"

// String lists the keyset's versions and statuses, such as
// "publicid.Keyset{1:decrypt-only 2:primary key:[redacted]}".
func (ks *Keyset) String() string {
	var b strings.Builder
	b.WriteString("publicid.Keyset{")
	for i, v := range ks.Versions() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v.Version + ":" + string(v.Status))
	}
	b.WriteString(" key:" + redacted + "}")
	return b.String()
}

// GoString is String, for %#v.
func (ks *Keyset) GoString() string { return ks.String() }

// Format writes String for every verb, so that no verb (%x, %+v, %d …)
// reaches the keys through reflection.
func (ks *Keyset) Format(f fmt.State, _ rune) { f.Write([]byte(ks.String())) }

// LogValue lists the versions and statuses for log/slog.
func (ks *Keyset) LogValue() slog.Value {
	var attrs []slog.Attr
	for _, v := range ks.Versions() {
		attrs = append(attrs, slog.String(v.Version, string(v.Status)))
	}
	return slog.GroupValue(attrs...)
}

// MarshalJSON lists the versions and statuses, {"keys":{"2":"primary"}},
// never the keys.
func (ks *Keyset) MarshalJSON() ([]byte, error) {
	b := []byte(`{"keys":{`)
	for i, v := range ks.Versions() {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%q:%q", v.Version, v.Status)
	}
	return append(b, "}}"...), nil
}

// String redacts a key.
func (e keyEntry) String() string { return "key(" + string(e.status) + " " + redacted + ")" }

// GoString redacts a key.
func (e keyEntry) GoString() string { return e.String() }

// Format redacts a key for every verb.
func (e keyEntry) Format(f fmt.State, _ rune) { f.Write([]byte(e.String())) }

// LogValue redacts a key.
func (e keyEntry) LogValue() slog.Value { return slog.StringValue(e.String()) }
