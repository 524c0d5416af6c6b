package revert_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const revertPath = "github.com/snowfence/snowfence/internal/revert"

// TestSwitchesOnlyInFenceFiles checks that every use of a switch of this
// package in the product's code (the module's non-test files, outside this
// package) is in a file named fence_*.go: the lines a revert tag undoes are
// the fence's load-bearing lines, and the file name is what tells a reader
// to change them only with scripts/prove-search. A fence file uses the
// switch its name says (fence_<tag>.go, revert.<Tag>) and no other, and
// the package doc lists it.
func TestSwitchesOnlyInFenceFiles(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root %s has no go.mod: %v", root, err)
	}
	files, uses := 0, 0
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			name := d.Name()
			if strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module (harness/, bench/): not the product
			}
			if path == filepath.Join(root, "internal", "revert") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		name := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == revertPath {
				name = "revert"
				if imp.Name != nil {
					name = imp.Name.Name
				}
			}
		}
		if name == "" {
			return nil
		}
		base := filepath.Base(path)
		fence := strings.HasPrefix(base, "fence_")
		rel, _ := filepath.Rel(root, path)
		if fence && !strings.Contains(string(doc), filepath.ToSlash(rel)) {
			t.Errorf("%s is a fence file the package doc (internal/revert/doc.go) does not list under its tag", rel)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == name {
				uses++
				if !fence {
					t.Errorf("%s: revert.%s outside a fence_*.go file: move the guarded step into a named function in the package's fence_<rule>.go "+
						"(see internal/revert's doc)", fset.Position(sel.Pos()).String()[len(root)+1:], sel.Sel.Name)
				} else if want := strings.TrimSuffix(strings.TrimPrefix(base, "fence_"), ".go"); !strings.EqualFold(sel.Sel.Name, want) {
					t.Errorf("%s: revert.%s in a fence file of another rule (%s): each rule's guarded lines are in its own fence_<tag>.go",
						fset.Position(sel.Pos()).String()[len(root)+1:], sel.Sel.Name, want)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 || uses == 0 {
		t.Fatalf("walked %d product files and found %d uses of the switches: the walk missed the product", files, uses)
	}
	t.Logf("%d product files, %d uses of the switches", files, uses)
}
