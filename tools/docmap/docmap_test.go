package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const root = "../.."

func TestReadmeLayoutIsCurrent(t *testing.T) {
	table, err := layoutTable(root)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := replaceGenerated(readme, table)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(readme) {
		t.Fatalf("README.md's repository layout is stale: run `go run ./tools/docmap -w`")
	}
}

func TestLayoutTableListsEveryPackage(t *testing.T) {
	table, err := layoutTable(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, place := range []string{"server/coordinator", "internal/wire", "server/remote", "tests/cluster", "tools/docmap", "docs/grafana"} {
		if !strings.Contains(table, "| `"+place+"` |") {
			t.Errorf("layout table has no row for %s", place)
		}
	}
}

func TestPackageWithoutCommentIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := packageSynopsis(dir); err == nil {
		t.Fatal("a package without a package comment was accepted")
	}
}

// citation is a docs/ file named in code, optionally with a section: `docs/NAME.md, "Title"` or
// `docs/NAME.md §N`. Comment continuation lines are joined before matching.
var (
	citationRE  = regexp.MustCompile(`docs/([a-z0-9-]+)\.md(?:, "([^"]+)"| §(\d+(?:\.\d+)?))?`)
	continueRE  = regexp.MustCompile(`\n\s*//\s*`)
	headingRE   = regexp.MustCompile(`(?m)^#+\s+(.*)$`)
	codeMarksRE = regexp.MustCompile("[`*]")
)

func TestDocCitationsResolve(t *testing.T) {
	headings := map[string][]string{}
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := continueRE.ReplaceAllString(string(src), " ")
		for _, m := range citationRE.FindAllStringSubmatch(text, -1) {
			name, title, section := m[1], m[2], m[3]
			hs, ok := headings[name]
			if !ok {
				doc, err := os.ReadFile(filepath.Join(root, "docs", name+".md"))
				if err != nil {
					t.Errorf("%s cites docs/%s.md, which does not exist", rel, name)
					headings[name] = nil
					continue
				}
				for _, h := range headingRE.FindAllStringSubmatch(string(doc), -1) {
					hs = append(hs, strings.ToLower(codeMarksRE.ReplaceAllString(h[1], "")))
				}
				headings[name] = hs
			}
			if hs == nil {
				continue
			}
			checked++
			switch {
			case title != "":
				want := strings.ToLower(codeMarksRE.ReplaceAllString(title, ""))
				if !anyHeading(hs, func(h string) bool { return strings.Contains(h, want) }) {
					t.Errorf("%s cites docs/%s.md, %q: no such section", rel, name, title)
				}
			case section != "":
				if !anyHeading(hs, func(h string) bool { return strings.HasPrefix(h, section+" ") || strings.HasPrefix(h, section+".") }) {
					t.Errorf("%s cites docs/%s.md §%s: no such section", rel, name, section)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d citations found; the pattern no longer matches the code's citations", checked)
	}
}

func anyHeading(hs []string, match func(string) bool) bool {
	for _, h := range hs {
		if match(h) {
			return true
		}
	}
	return false
}
