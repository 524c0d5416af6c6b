package publicid

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseKeysetRefuses(t *testing.T) {
	k1, k2 := testKey1, testKey2
	entry := func(status, key string) string {
		return fmt.Sprintf(`{"status": %q, "key": %q}`, status, key)
	}
	tests := []struct {
		name, text string
	}{
		{"empty", ``},
		{"not an object", `[]`},
		{"no keys", `{}`},
		{"no primary", `{"keys": {"1": ` + entry("decrypt-only", k1) + `}}`},
		{"two primaries", `{"keys": {"1": ` + entry("primary", k1) + `, "2": ` + entry("primary", k2) + `}}`},
		{"empty keys", `{"keys": {}}`},
		{"unknown top member", `{"keys": {"1": ` + entry("primary", k1) + `}, "extra": 1}`},
		{"keys twice", `{"keys": {"1": ` + entry("primary", k1) + `}, "keys": {"2": ` + entry("primary", k2) + `}}`},
		{"Keys", `{"Keys": {"1": ` + entry("primary", k1) + `}}`},
		{"version twice", `{"keys": {"1": ` + entry("primary", k1) + `, "1": ` + entry("decrypt-only", k2) + `}}`},
		{"version escaped twice", `{"keys": {"1": ` + entry("primary", k1) + `, "\u0031": ` + entry("decrypt-only", k2) + `}}`},
		{"version two characters", `{"keys": {"12": ` + entry("primary", k1) + `}}`},
		{"version upper case", `{"keys": {"A": ` + entry("primary", k1) + `}}`},
		{"version i", `{"keys": {"i": ` + entry("primary", k1) + `}}`},
		{"version empty", `{"keys": {"": ` + entry("primary", k1) + `}}`},
		{"unknown status", `{"keys": {"1": ` + entry("active", k1) + `}}`},
		{"Status", `{"keys": {"1": {"Status": "primary", "key": "` + k1 + `"}}}`},
		{"status twice", `{"keys": {"1": {"status": "primary", "status": "primary", "key": "` + k1 + `"}}}`},
		{"key twice", `{"keys": {"1": {"status": "primary", "key": "` + k1 + `", "key": "` + k2 + `"}}}`},
		{"unknown key member", `{"keys": {"1": {"status": "primary", "key": "` + k1 + `", "note": "x"}}}`},
		{"no status", `{"keys": {"1": {"key": "` + k1 + `"}}}`},
		{"primary without key", `{"keys": {"1": {"status": "primary"}}}`},
		{"decrypt-only without key", `{"keys": {"2": ` + entry("primary", k2) + `, "1": {"status": "decrypt-only"}}}`},
		{"short key", `{"keys": {"1": ` + entry("primary", k1[:30]) + `}}`},
		{"long key", `{"keys": {"1": ` + entry("primary", k1+"00") + `}}`},
		{"upper-case key", `{"keys": {"1": ` + entry("primary", strings.ToUpper(k2)) + `}}`},
		{"non-hex key", `{"keys": {"1": ` + entry("primary", "zz"+k1[2:]) + `}}`},
		{"base64 key", `{"keys": {"1": ` + entry("primary", base64.StdEncoding.EncodeToString(make([]byte, 16))) + `}}`},
		{"key a number", `{"keys": {"1": {"status": "primary", "key": 1234}}}`},
		{"same key twice", `{"keys": {"1": ` + entry("primary", k1) + `, "2": ` + entry("decrypt-only", k1) + `}}`},
		{"trailing data", `{"keys": {"1": ` + entry("primary", k1) + `}} {}`},
		{"truncated", `{"keys": {"1": ` + entry("primary", k1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks, err := ParseKeyset([]byte(tt.text))
			if !errors.Is(err, ErrInvalidKeyset) {
				t.Fatalf("ParseKeyset = %v, %v; want ErrInvalidKeyset", ks, err)
			}
			checkNoKeys(t, "error", err.Error())
		})
	}
}

// keyForms are the ways key material could show in text: each test key in
// hex (either case), base64 and Go's byte-slice and array formats.
func keyForms(t *testing.T) []string {
	var forms []string
	for _, k := range []string{testKey1, testKey2, testKey3} {
		b, err := hex.DecodeString(k)
		if err != nil {
			t.Fatal(err)
		}
		forms = append(forms, k, strings.ToUpper(k), base64.StdEncoding.EncodeToString(b),
			base64.RawURLEncoding.EncodeToString(b), fmt.Sprint(b), fmt.Sprintf("%#v", b), k[:16], k[16:], string(b))
	}
	return forms
}

func checkNoKeys(t *testing.T, what, text string) {
	t.Helper()
	for _, f := range keyForms(t) {
		if strings.Contains(text, f) {
			t.Errorf("%s %q holds key material %q", what, text, f)
		}
	}
}

// TestKeysetRedacted formats a keyset every way a program might: fmt with
// every verb, as a value and behind pointers, in a struct, slog in text and
// JSON, encoding/json. None shows key material.
func TestKeysetRedacted(t *testing.T) {
	ks := testKeyset(t)
	holder := struct {
		Keys  *Keyset
		Entry keyEntry
	}{ks, ks.keys[2]}
	// The Keyset value itself (which go vet keeps programs from copying)
	// reaches fmt as a reflect.Value of it.
	values := map[string]any{"*Keyset": ks, "Keyset": reflect.ValueOf(ks).Elem(), "struct": holder, "&struct": &holder, "entry": ks.keys[2]}
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T", "%p"} {
			if verb == "%p" && name != "*Keyset" && name != "&struct" {
				continue
			}
			checkNoKeys(t, name+" "+verb, fmt.Sprintf(verb, v))
		}
	}
	if got := ks.String(); got != "publicid.Keyset{0:retired 1:decrypt-only 2:primary key:[redacted]}" {
		t.Errorf("String() = %q", got)
	}
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var buf bytes.Buffer
		slog.New(h(&buf)).Info("loaded", "keyset", ks, "entry", ks.keys[2], "holder", holder)
		checkNoKeys(t, "log line", buf.String())
		if !strings.Contains(buf.String(), "primary") {
			t.Errorf("log line %q does not list the versions", buf.String())
		}
	}
	b, err := json.Marshal(holder)
	if err != nil {
		t.Fatal(err)
	}
	checkNoKeys(t, "JSON", string(b))
	if got, want := string(b), `{"Keys":{"keys":{"0":"retired","1":"decrypt-only","2":"primary"}},"Entry":{}}`; got != want {
		t.Errorf("JSON %s, want %s", got, want)
	}
}

func TestReadKeyset(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.json")
	text := `{"keys": {"1": {"status": "primary", "key": "` + testKey1 + `"}}}`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := ReadKeyset(path)
	if err != nil || ks.Primary() != "1" {
		t.Fatalf("ReadKeyset = %v, %v", ks, err)
	}
	if err := CheckKeysetFileMode(path); err != nil {
		t.Errorf("CheckKeysetFileMode(0600) = %v, want nil", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckKeysetFileMode(path); !errors.Is(err, ErrKeysetFileMode) {
		t.Errorf("CheckKeysetFileMode(0644) = %v, want ErrKeysetFileMode", err)
	}
	if err := os.WriteFile(path, []byte(text[:len(text)-1]), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyset(path); !errors.Is(err, ErrInvalidKeyset) || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadKeyset(truncated) = %v; want ErrInvalidKeyset naming the file", err)
	}
	if _, err := ReadKeyset(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadKeyset(missing) = %v; want os.ErrNotExist", err)
	}
}

// TestKeysetErrorsNeverQuoteAKey: ParseKeyset's errors name the version, never
// a key, even when a key sits where a "status" value or a member name belongs
// (they were once quoted verbatim). A key pasted into the wrong place of the
// file (a slip when editing it by hand during a rotation) then reached the
// error that serve prints and logs at start.
func TestKeysetErrorsNeverQuoteAKey(t *testing.T) {
	k := testKey3
	for name, text := range map[string]string{
		"key in status":      `{"keys": {"2": {"status": "` + k + `", "key": "` + testKey2 + `"}}}`,
		"key as version":     `{"keys": {"` + k + `": {"status": "primary", "key": "` + testKey2 + `"}}}`,
		"key as member name": `{"keys": {"2": {"status": "primary", "` + k + `": "x"}}}`,
		"key as top member":  `{"` + k + `": {}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseKeyset([]byte(text))
			if !errors.Is(err, ErrInvalidKeyset) {
				t.Fatalf("ParseKeyset: %v; want ErrInvalidKeyset", err)
			}
			checkNoKeys(t, "error", err.Error())
		})
	}
}
