package plot

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CheckDir refuses a directory that cannot be made or written into
// before anything is run: its parent must exist, and it must be a
// directory if it exists.
func CheckDir(dir string) error {
	if dir == "" {
		return errors.New("no plot directory given")
	}
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("%s: not a directory", dir)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	parent := filepath.Dir(filepath.Clean(dir))
	pst, err := os.Stat(parent)
	if err != nil {
		return fmt.Errorf("%s: its parent %s does not exist", dir, parent)
	}
	if !pst.IsDir() {
		return fmt.Errorf("%s: its parent %s is not a directory", dir, parent)
	}
	return nil
}

// Write renders the figures in format into dir (made if missing; its
// parent must exist) as NAME.FORMAT. A file there is replaced only when
// force is set or it already holds the same bytes; otherwise nothing is
// written and the error names it. Each file is written whole (a
// temporary file renamed over the name). It returns the paths written.
func Write(dir string, figs []*Figure, format string, force bool) ([]string, error) {
	if !slices.Contains(Formats, format) {
		return nil, fmt.Errorf("plot format %q: want %s", format, strings.Join(Formats, " or "))
	}
	if err := CheckDir(dir); err != nil {
		return nil, err
	}
	type file struct {
		path string
		data []byte
	}
	var files []file
	var clash []string
	for _, f := range figs {
		b, err := Render(f, format)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, f.Name+"."+format)
		if old, err := os.ReadFile(path); err == nil && !force && !bytes.Equal(old, b) {
			clash = append(clash, path)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		files = append(files, file{path, b})
	}
	if len(clash) > 0 {
		more := ""
		if len(clash) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(clash)-1)
		}
		return nil, fmt.Errorf("%s exists and differs%s: --force replaces it", clash[0], more)
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	var wrote []string
	for _, f := range files {
		if err := writeFile(f.path, f.data); err != nil {
			return wrote, err
		}
		wrote = append(wrote, f.path)
	}
	return wrote, nil
}

// writeFile writes b to a temporary file beside path and renames it over
// path: path holds the old bytes or the new ones, never a part.
func writeFile(path string, b []byte) error {
	t, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = t.Write(b)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(t.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(t.Name(), path)
	}
	if err != nil {
		os.Remove(t.Name())
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// FileFormat is the format a path names by its extension (".svg",
// ".png"), or "" when it names none (a directory).
func FileFormat(path string) string {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	if slices.Contains(Formats, ext) {
		return ext
	}
	return ""
}

// Save writes the figures to target: a file named NAME.svg or NAME.png
// (the format its extension's) when it has one figure, else a directory
// (Write, in format).
func Save(target string, figs []*Figure, format string, force bool) ([]string, error) {
	ff := FileFormat(target)
	if ff == "" {
		return Write(target, figs, format, force)
	}
	if err := CheckTarget(target); err != nil {
		return nil, err
	}
	if len(figs) != 1 {
		return nil, fmt.Errorf("%s: %d figures for one file: give a directory, or one kind (--plot-kinds)", target, len(figs))
	}
	b, err := Render(figs[0], ff)
	if err != nil {
		return nil, err
	}
	if old, err := os.ReadFile(target); err == nil && !force && !bytes.Equal(old, b) {
		return nil, fmt.Errorf("%s exists and differs: --force replaces it", target)
	}
	if err := writeFile(target, b); err != nil {
		return nil, err
	}
	return []string{target}, nil
}

// otherImages are image and document extensions Render does not write: a
// target named so is a mistake, not a directory to make.
var otherImages = []string{".bmp", ".eps", ".gif", ".jpeg", ".jpg", ".pdf", ".ps", ".tif", ".tiff", ".webp"}

// CheckTarget refuses a target Save could not write, before anything is
// run: a file's directory must exist, a directory's parent must.
func CheckTarget(target string) error {
	if ext := strings.ToLower(filepath.Ext(target)); slices.Contains(otherImages, ext) {
		return fmt.Errorf("%s: a %s file: figures are written as .svg or .png, or into a directory", target, ext)
	}
	if FileFormat(target) == "" {
		return CheckDir(target)
	}
	parent := filepath.Dir(filepath.Clean(target))
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		return fmt.Errorf("%s: its directory %s does not exist", target, parent)
	}
	if st, err := os.Stat(target); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", target)
	}
	return nil
}
