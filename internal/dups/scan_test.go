package dups

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snowfence/snowfence"
)

// idAt is a v1 ID of machine m, millisecond tick and sequence s.
func idAt(t *testing.T, tick int64, m, s int) snowfence.ID {
	t.Helper()
	id, err := snowfence.V1().Compose(tick, 0, m, s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// writeFile writes text to a file named name in dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// scanAll runs Scan and returns the duplicates, the bad lines and the
// summary.
func scanAll(t *testing.T, opts Options, files ...string) (map[snowfence.ID]int64, []BadLine, Summary) {
	t.Helper()
	if opts.TempDir == "" {
		opts.TempDir = t.TempDir()
	}
	var bad []BadLine
	opts.OnBad = func(b BadLine) { bad = append(bad, b) }
	got := map[snowfence.ID]int64{}
	sum, err := Scan(context.Background(), opts, files, func(d Duplicate) error {
		got[d.ID] = d.Count
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return got, bad, sum
}

// TestScanPlanted plants duplicates in files of every line-ending habit
// and checks that exactly those are found, in memory and partitioned.
func TestScanPlanted(t *testing.T) {
	dir := t.TempDir()
	twice, thrice, across := idAt(t, 1000, 37, 5), idAt(t, 2000, 3, 0), idAt(t, 3000, 9, 4095)
	var filler []string
	for i := range 5000 {
		filler = append(filler, idAt(t, 5000+int64(i), 11, i%7).String())
	}
	a := writeFile(t, dir, "a.txt", strings.Join([]string{
		twice.String(), thrice.String(), "", filler[0], twice.String(), "not-an-id", across.String(),
	}, "\n")+"\n")
	// CRLF, empty lines, a bad line, a final line with no newline.
	b := writeFile(t, dir, "b.txt", strings.Join([]string{
		thrice.String(), "", "", strings.Join(filler[1:2500], "\r\n"), "042", thrice.String() + "  ", across.String(),
	}, "\r\n"))
	none := writeFile(t, dir, "none.txt", strings.Join(filler[2500:], "\n")+"\n")
	want := map[snowfence.ID]int64{twice: 2, thrice: 3, across: 2}
	for _, memory := range []int64{0, MinMemory} {
		t.Run(fmt.Sprintf("memory %d", memory), func(t *testing.T) {
			got, bad, sum := scanAll(t, Options{Config: Config{Memory: memory}}, a, b, none)
			if !maps.Equal(got, want) {
				t.Errorf("found %v, want %v", got, want)
			}
			wantBad := []BadLine{{File: a, Line: 6, Lines: 1, Text: "not-an-id", Reason: "not an ID"}, {File: b, Line: 3 + 2499 + 1, Lines: 1, Text: "042", Reason: "not an ID"}}
			if fmt.Sprint(bad) != fmt.Sprint(wantBad) {
				t.Errorf("bad lines %v, want %v", bad, wantBad)
			}
			wantSum := Summary{Files: 3, IDs: 5 + 2499 + 3 + 2500, Bad: 2, Duplicates: 3, Extra: 4, Partitions: sum.Partitions}
			if sum != wantSum {
				t.Errorf("summary %+v, want %+v", sum, wantSum)
			}
			if memory == MinMemory && sum.Partitions < 2 {
				t.Errorf("%d partitions with the smallest budget", sum.Partitions)
			}
			if got, _, _ := scanAll(t, Options{Config: Config{Memory: memory}}, none); len(got) != 0 {
				t.Errorf("the file with no duplicates: found %v", got)
			}
		})
	}
}

func TestScanUUIDForm(t *testing.T) {
	dir := t.TempDir()
	id := snowfence.MustParseID("97301141913751557")
	f := writeFile(t, dir, "u.txt", "01a0dd96-2600-802b-8d76-fc0012802b88\n97301141913751557\n0199a4f0-6c10-7a3b-8f2e-5d1c0b9a8e7f\n")
	got, bad, _ := scanAll(t, Options{}, f)
	if got[id] != 2 || len(got) != 1 {
		t.Errorf("found %v, want %s twice (decimal and UUIDv8)", got, id)
	}
	if len(bad) != 1 || bad[0].Line != 3 {
		t.Errorf("bad lines %v, want line 3 (a UUIDv7)", bad)
	}
}

// TestScanLongLine: a line longer than the read buffer is one bad line,
// and the lines after it are read.
func TestScanLongLine(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("7", 3*readBufferLen(MinMemory)+5)
	f := writeFile(t, dir, "l.txt", "12\n"+long+"\n12\n"+long)
	got, bad, sum := scanAll(t, Options{Config: Config{Memory: MinMemory}}, f)
	if got[12] != 2 || sum.Bad != 2 || len(bad) != 2 || bad[0].Line != 2 || bad[1].Line != 4 {
		t.Errorf("found %v, bad lines %v (%d)", got, bad, sum.Bad)
	}
}

func TestScanGzip(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ids.txt.gz")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(fh)
	fmt.Fprint(zw, "5\n6\n5\n")
	if err := errors.Join(zw.Close(), fh.Close()); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := scanAll(t, Options{}, p); got[5] != 2 || len(got) != 1 {
		t.Errorf("found %v, want 5 twice", got)
	}
}

func TestScanCSV(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "e.csv", "order,\"id\",note\r\n"+
		"1,97301141913751557,\"a, quoted\nnote\"\r\n"+
		"2,\"97301141913751557\",plain\r\n"+
		"3,oops,x\r\n"+
		"4\r\n"+
		"5,42,\"\"\"\"\r\n"+
		"6,42,y")
	tests := []struct {
		name     string
		column   string
		want     map[snowfence.ID]int64
		wantBad  []int64
		wantErr  error
		wantSumm int64
	}{
		{"by name", "id", map[snowfence.ID]int64{97301141913751557: 2, 42: 2}, []int64{5, 6}, nil, 4},
		{"by number, header skipped", "2", map[snowfence.ID]int64{97301141913751557: 2, 42: 2}, []int64{5, 6}, nil, 4},
		{"by number, no IDs", "1", map[snowfence.ID]int64{}, nil, nil, 6},
		{"unknown name", "uid", nil, nil, ErrColumn, 0},
		{"column 0", "0", nil, nil, ErrColumn, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bad []int64
			got := map[snowfence.ID]int64{}
			sum, err := Scan(context.Background(), Options{Column: tt.column, Config: Config{TempDir: t.TempDir()}, OnBad: func(b BadLine) { bad = append(bad, b.Line) }},
				[]string{f}, func(d Duplicate) error { got[d.ID] = d.Count; return nil })
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Scan: %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !maps.Equal(got, tt.want) || fmt.Sprint(bad) != fmt.Sprint(tt.wantBad) || sum.IDs != tt.wantSumm {
				t.Errorf("found %v, bad lines %v, %d IDs; want %v, %v, %d", got, bad, sum.IDs, tt.want, tt.wantBad, tt.wantSumm)
			}
		})
	}
}

// TestScanCSVQuoteError: a record encoding/csv refuses is one bad line,
// and the records after it are read.
func TestScanCSVQuoteError(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "q.csv", "1,a\"b\n2,5\n3,\"5\"\n")
	var bad []BadLine
	got := map[snowfence.ID]int64{}
	_, err := Scan(context.Background(), Options{Column: "2", OnBad: func(b BadLine) { bad = append(bad, b) }}, []string{f},
		func(d Duplicate) error { got[d.ID] = d.Count; return nil })
	if err != nil || got[5] != 2 || len(bad) != 1 || bad[0].Line != 1 {
		t.Errorf("Scan: %v; found %v, bad lines %v; want 5 twice and line 1 bad", err, got, bad)
	}
}

func TestScanStops(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "a.txt", "1\n1\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Scan(ctx, Options{}, []string{f}, func(Duplicate) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Scan with a cancelled context: %v", err)
	}
	stop := errors.New("stop")
	if _, err := Scan(context.Background(), Options{}, []string{f}, func(Duplicate) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Scan whose callback fails: %v", err)
	}
	if _, err := Scan(context.Background(), Options{}, []string{filepath.Join(dir, "missing")}, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Scan of a missing file: %v", err)
	}
}
