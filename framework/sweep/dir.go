package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// The files of a sweep directory.
const (
	ManifestFile = "manifest.json"
	MergedFile   = "sweep.json" // the merged report
	TableFile    = "sweep.txt"  // the merged report as a table
	PointsDir    = "points"     // points/I.json: point I's result
	ReportsDir   = "reports"    // reports/I-V-SEED.json: one run's full report
	LogsDir      = "logs"       // logs/I.out, logs/I.err: a Slurm task's output
	JobsFile     = "jobs"       // one line per Slurm submission: "JOBID ARRAY"
	BinaryFile   = "txlab"      // the binary Slurm tasks run
	BatchFile    = "sweep.sbatch"
)

// WriteAtomic writes b to path through a temporary file in the same
// directory renamed over it: a reader, or a collector that stops, sees
// the old file or the whole new one, never part of it.
func WriteAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func (m *Manifest) bytes() []byte {
	var b bytes.Buffer
	if err := encode(&b, m); err != nil {
		panic("sweep: manifest does not encode: " + err.Error())
	}
	return b.Bytes()
}

// CheckDir says whether dir may hold sweep m, writing nothing: a
// directory that does not exist or is empty may; one that holds this
// very sweep (the same manifest) may, and the sweep resumes (resume is
// true); anything else is refused.
func CheckDir(dir string, m *Manifest) (resume bool, err error) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("--dir %s: %w", dir, err)
	}
	if !st.IsDir() {
		return false, fmt.Errorf("--dir %s is not a directory", dir)
	}
	old, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		ents, rerr := os.ReadDir(dir)
		if rerr != nil {
			return false, fmt.Errorf("--dir %s: %w", dir, rerr)
		}
		if len(ents) > 0 {
			return false, fmt.Errorf("--dir %s is not empty and holds no sweep (no %s): give a new or empty directory", dir, ManifestFile)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("--dir %s: %w", dir, err)
	}
	if !bytes.Equal(old, m.bytes()) {
		return false, fmt.Errorf("--dir %s holds another sweep (its %s differs from this one's); nothing was written: give another --dir, or merge that one with `txlab sweep collect %s`", dir, ManifestFile, dir)
	}
	return true, nil
}

// Create makes dir the home of m (CheckDir first): the manifest and the
// subdirectories.
func Create(dir string, m *Manifest) error {
	for _, d := range []string{dir, filepath.Join(dir, PointsDir), filepath.Join(dir, ReportsDir), filepath.Join(dir, LogsDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	path := filepath.Join(dir, ManifestFile)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, m.bytes()) {
		return nil
	}
	return WriteAtomic(path, m.bytes())
}

// Open reads the sweep in dir, ready to build its points.
func Open(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s holds no sweep (no %s)", dir, ManifestFile)
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if err := m.Ready(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}

// PointFile is where point i's result goes.
func PointFile(dir string, i int) string {
	return filepath.Join(dir, PointsDir, strconv.Itoa(i)+".json")
}

// ReadPoint reads point i's result; an error wrapping fs.ErrNotExist if
// the point has none yet.
func ReadPoint(dir string, i int) (*PointResult, error) {
	path := PointFile(dir, i)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p PointResult
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if p.Index != i {
		return nil, fmt.Errorf("%s: holds point %d", path, p.Index)
	}
	return &p, nil
}

// Results reads the points' results in dir: those there, by index, and
// the indices of those missing.
func (m *Manifest) Results(dir string) ([]PointResult, []int, error) {
	var have []PointResult
	var missing []int
	for _, p := range m.Points {
		r, err := ReadPoint(dir, p.Index)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = append(missing, p.Index)
		case err != nil:
			return nil, nil, err
		default:
			have = append(have, *r)
		}
	}
	return have, missing, nil
}

// WriteMerged writes the merged report to dir's sweep.json and its
// table to sweep.txt, and returns the JSON.
func WriteMerged(dir string, r *Report) ([]byte, error) {
	var js, txt bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		return nil, err
	}
	if err := WriteText(&txt, r); err != nil {
		return nil, err
	}
	if err := WriteAtomic(filepath.Join(dir, MergedFile), js.Bytes()); err != nil {
		return nil, err
	}
	return js.Bytes(), WriteAtomic(filepath.Join(dir, TableFile), txt.Bytes())
}
