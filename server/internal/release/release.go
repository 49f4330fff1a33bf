// Package release writes what tagging a release would publish: every module
// of the repository, at one version, in the layout of a Go module proxy
// (GOPROXY=file://DIR). The publishability test builds programs against it
// with no replace directive, no workspace and no checksum database, the way
// a user of a tagged release would.
package release

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// Module is one module of the repository.
type Module struct {
	Path string // module path, from its go.mod
	Dir  string // directory of its go.mod, relative to the repository root, "." for the root
}

// Modules lists the modules whose go.mod files git tracks under root,
// sorted by directory.
func Modules(root string) ([]Module, error) {
	files, err := trackedFiles(root)
	if err != nil {
		return nil, err
	}
	var mods []Module
	for _, f := range files {
		if path.Base(f) != "go.mod" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		mp := modfile.ModulePath(data)
		if mp == "" {
			return nil, fmt.Errorf("%s names no module", f)
		}
		mods = append(mods, Module{Path: mp, Dir: path.Dir(f)})
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Dir < mods[j].Dir })
	return mods, nil
}

// WriteProxy writes each module of mods at version into dir, laid out as a
// module proxy serves it: @v/list, @v/VERSION.info, .mod and .zip. A
// module's zip holds the files git tracks in its directory as they are in
// the working tree, less those of the modules nested in it, exactly as the
// go command would cut them from a tag.
func WriteProxy(dir, root string, mods []Module, version string) error {
	files, err := trackedFiles(root)
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		return err
	}
	for _, m := range mods {
		mv := module.Version{Path: m.Path, Version: version}
		esc, err := module.EscapePath(m.Path)
		if err != nil {
			return err
		}
		vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return err
		}
		gomod, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.Dir), "go.mod"))
		if err != nil {
			return err
		}
		if err := writeFiles(vdir, map[string][]byte{
			"list":            []byte(version + "\n"),
			version + ".info": info,
			version + ".mod":  gomod,
		}); err != nil {
			return err
		}
		zf, err := os.Create(filepath.Join(vdir, version+".zip"))
		if err != nil {
			return err
		}
		err = zip.Create(zf, mv, moduleFiles(root, m, mods, files))
		if cerr := zf.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("zip of %s: %w", m.Path, err)
		}
	}
	return nil
}

func writeFiles(dir string, files map[string][]byte) error {
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// moduleFiles returns the tracked files of m: those under its directory and
// under no directory of another module nested in it.
func moduleFiles(root string, m Module, mods []Module, tracked []string) []zip.File {
	within := func(f, dir string) bool { return dir == "." || strings.HasPrefix(f, dir+"/") }
	var out []zip.File
	for _, f := range tracked {
		if !within(f, m.Dir) {
			continue
		}
		nested := false
		for _, o := range mods {
			if o.Dir != m.Dir && within(o.Dir+"/", m.Dir) && within(f, o.Dir) {
				nested = true
				break
			}
		}
		if nested {
			continue
		}
		rel := f
		if m.Dir != "." {
			rel = strings.TrimPrefix(f, m.Dir+"/")
		}
		out = append(out, diskFile{rel: rel, abs: filepath.Join(root, filepath.FromSlash(f))})
	}
	return out
}

// diskFile is a tracked file read from the working tree.
type diskFile struct{ rel, abs string }

func (f diskFile) Path() string                 { return f.rel }
func (f diskFile) Lstat() (fs.FileInfo, error)  { return os.Lstat(f.abs) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }

// trackedFiles lists the files git tracks under root that exist in the
// working tree, slash-separated and relative to root.
func trackedFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var files []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, 0); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	for sc.Scan() {
		f := sc.Text()
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the working tree, or a symlink git tracks
		}
		files = append(files, f)
	}
	return files, sc.Err()
}
