package lazyre

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestNewCompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^v(\d+)\.(\d+)$`)
	var wg sync.WaitGroup
	got := make([]*regexp.Regexp, 8)
	for i := range got {
		wg.Go(func() { got[i] = re() })
	}
	wg.Wait()
	for _, g := range got {
		if g != got[0] {
			t.Fatal("two calls returned two compiled expressions")
		}
	}
	if m := got[0].FindStringSubmatch("v1.32"); len(m) != 3 || m[2] != "32" {
		t.Errorf("v1.32: got %q", m)
	}
}

func TestNewPanicsOnABadExpressionWhenUsed(t *testing.T) {
	re := New(`(unclosed`) // no panic yet: nothing compiled
	defer func() {
		if recover() == nil {
			t.Error("a bad expression did not panic on first use")
		}
	}()
	re()
}

// TestEveryExpressionCompiles compiles every expression that the module's code gives to New,
// as a package-level regexp.MustCompile did when the process started: a typo in one fails
// here, not in front of a user on the first text that reaches it. An argument must be a
// constant expression (literals, constants of its package, +) so that it can be checked.
func TestEveryExpressionCompiles(t *testing.T) {
	n := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "../.." {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			return nil
		}
		n += checkPackage(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Errorf("found %d calls of lazyre.New in the module, expected the checks', redactor's and parsers' expressions", n)
	}
}

// checkPackage compiles the expressions given to New in the non-test files of dir.
func checkPackage(t *testing.T, dir string) int {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	consts := stringConsts(files)
	n := 0
	for _, f := range files {
		ast.Inspect(f, func(node ast.Node) bool {
			call, ok := node.(*ast.CallExpr)
			if !ok || !isLazyreNew(call) || len(call.Args) != 1 {
				return true
			}
			n++
			pos := fset.Position(call.Pos())
			expr, err := constString(call.Args[0], consts)
			if err != nil {
				t.Errorf("%s: lazyre.New needs a constant expression: %v", pos, err)
				return true
			}
			if _, err := regexp.Compile(expr); err != nil {
				t.Errorf("%s: %v", pos, err)
			}
			return true
		})
	}
	return n
}

func isLazyreNew(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "New" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "lazyre"
}

// stringConsts are the package-level constant declarations of files, unevaluated.
func stringConsts(files []*ast.File) map[string]ast.Expr {
	out := map[string]ast.Expr{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						out[name.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	return out
}

// constString evaluates a string constant expression: literals, constants of the package,
// concatenation and parentheses.
func constString(e ast.Expr, consts map[string]ast.Expr) (string, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", fmt.Errorf("a %s literal", e.Kind)
		}
		return strconv.Unquote(e.Value)
	case *ast.ParenExpr:
		return constString(e.X, consts)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", fmt.Errorf("operator %s", e.Op)
		}
		a, err := constString(e.X, consts)
		if err != nil {
			return "", err
		}
		b, err := constString(e.Y, consts)
		return a + b, err
	case *ast.Ident:
		if v, ok := consts[e.Name]; ok {
			return constString(v, consts)
		}
		return "", fmt.Errorf("%s is not a constant of the package", e.Name)
	}
	return "", fmt.Errorf("an expression of type %T", e)
}
