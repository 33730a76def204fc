package plugin

// Finding and verifying plugins: the options a run names them with,
// their file names, the directory's checksum manifest.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/txlab/txlab/internal/regfile"
)

// Env names.
const (
	EnvDir        = "TXLAB_PLUGIN_DIR"        // the plugin directory
	EnvOverride   = "TXLAB_PLUGIN_OVERRIDE"   // built-ins the directory's plugins may replace (comma-separated)
	EnvTransport  = "TXLAB_PLUGIN_TRANSPORT"  // "shm" (default) or "grpc"
	EnvCPUProfile = "TXLAB_PLUGIN_CPUPROFILE" // a plugin profiles itself to FILE.PID
	Manifest      = "txlab-plugins.sum"       // checksums of a directory's plugins
	QdiscPrefix   = "txlab-qdisc-"            // a qdisc plugin's file name: txlab-qdisc-KIND
	DriverPrefix  = "txlab-driver-"           // a driver plugin's file name: txlab-driver-NAME
)

// DefaultTimeout is how long the host waits for one call's answer.
const DefaultTimeout = 10 * time.Second

// Options say which plugins a run may use and how.
type Options struct {
	// Isolate runs the built-in qdiscs and drivers out of process too,
	// served by Self.
	Isolate bool
	// Paths are plugin binaries named on the command line.
	Paths []string
	// Dir is a plugin directory; its plugins need an entry in Dir's
	// txlab-plugins.sum.
	Dir string
	// Timeout bounds each call (0: DefaultTimeout).
	Timeout time.Duration
	// Transport is "shm" (default where supported) or "grpc".
	Transport string
	// Override names the built-ins a plugin from Dir may replace
	// (override.go).
	Override []string
	// Log receives the plugins' log lines, prefixed with the plugin's
	// name (nil: stderr); LogLevel is hclog's ("" = error).
	Log      io.Writer
	LogLevel string
}

// Enabled reports whether anything runs out of process.
func (o Options) Enabled() bool { return o.Isolate || len(o.Paths) > 0 || o.Dir != "" }

// Serves reports whether a plugin o names serves typ ("qdisc" or
// "driver") name, by the plugins' file names: nothing is started or
// hashed (a script asks this at every qdisc and device line).
func (o Options) Serves(typ, name string) bool {
	want := QdiscPrefix + name
	if typ == "driver" {
		want = DriverPrefix + name
	}
	for _, p := range o.Paths {
		if filepath.Base(p) == want {
			return true
		}
	}
	if o.Dir == "" {
		return false
	}
	st, err := os.Stat(filepath.Join(o.Dir, want))
	return err == nil && !st.IsDir()
}

// Found is a plugin binary found by name.
type Found struct {
	Path   string
	Type   string // "qdisc" or "driver"
	Name   string // the kind or driver name
	Sum    []byte // the checksum it must have
	SumErr error  // why it has none (not in the manifest)
}

// Discover lists the plugins Paths and Dir name.
func Discover(o Options) ([]Found, error) {
	var out []Found
	for _, p := range o.Paths {
		f, err := Locate(p)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "plugin ") {
				err = fmt.Errorf("plugin %s: %w", p, err)
			}
			return nil, err
		}
		out = append(out, f)
	}
	if o.Dir != "" {
		sums, err := readManifest(o.Dir)
		if err != nil {
			return nil, err
		}
		ents, err := os.ReadDir(o.Dir)
		if err != nil {
			return nil, fmt.Errorf("plugin dir: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() || !(strings.HasPrefix(e.Name(), QdiscPrefix) || strings.HasPrefix(e.Name(), DriverPrefix)) {
				continue
			}
			f, err := found(filepath.Join(o.Dir, e.Name()))
			if err != nil {
				return nil, err
			}
			if err := CheckFile(f.Path); err != nil {
				// Refused when it is used (or listed), before it is opened.
				f.SumErr = fmt.Errorf("%w (in --plugin-dir %s)", err, o.Dir)
			} else if s, ok := sums[e.Name()]; ok {
				f.Sum = s
			} else {
				f.SumErr = fmt.Errorf("not in %s (add it with `txlab plugin add`)", filepath.Join(o.Dir, Manifest))
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// Locate is a plugin binary named on the command line, with the
// checksum it has now (the user vouches for it).
func Locate(path string) (Found, error) {
	f, err := found(path)
	if err != nil {
		return f, err
	}
	if f.Sum, err = fileSum(path); err != nil {
		return f, fmt.Errorf("plugin %s: %w", path, err)
	}
	return f, nil
}

// Self is this binary as the plugin that serves the built-ins.
func Self() (Found, error) {
	selfOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			selfErr = err
			return
		}
		sum, err := fileSum(self)
		if err != nil {
			err = fmt.Errorf("%s: %w", self, err)
		}
		selfFound, selfErr = Found{Path: self, Type: "builtin", Name: "txlab", Sum: sum}, err
	})
	return selfFound, selfErr
}

// The running binary does not change under us: hash it once.
var (
	selfOnce  sync.Once
	selfFound Found
	selfErr   error
)

func found(path string) (Found, error) {
	base := filepath.Base(path)
	switch {
	case strings.HasPrefix(base, QdiscPrefix) && len(base) > len(QdiscPrefix):
		return Found{Path: path, Type: "qdisc", Name: strings.TrimPrefix(base, QdiscPrefix)}, nil
	case strings.HasPrefix(base, DriverPrefix) && len(base) > len(DriverPrefix):
		return Found{Path: path, Type: "driver", Name: strings.TrimPrefix(base, DriverPrefix)}, nil
	}
	return Found{}, fmt.Errorf("plugin %s: name it %sKIND or %sNAME", path, QdiscPrefix, DriverPrefix)
}

// MaxPluginSize bounds a plugin binary: a bigger file (a 50 GB sparse
// one) is refused before it is hashed, and the hash reads no more.
const MaxPluginSize = 1 << 30

// CheckFile refuses what cannot be a plugin binary before anything opens
// it (opening a FIFO waits for a writer; a device never ends): anything
// but a regular file (symlinks followed), or one over MaxPluginSize. The
// error does not name path: the caller says which flag named it.
func CheckFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return checkFileInfo(st)
}

func checkFileInfo(st os.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s, not a file", regfile.Kind(st.Mode()))
	}
	if st.Size() > MaxPluginSize {
		return fmt.Errorf("%d bytes, more than the %d a plugin may be", st.Size(), MaxPluginSize)
	}
	return nil
}

// fileSum is the sha256 of the plugin binary at path, streamed through
// the hash and bounded: only a regular file (checked before the open,
// and again on what was opened) of at most MaxPluginSize bytes. Its
// errors do not name path.
func fileSum(path string) ([]byte, error) {
	f, err := regfile.Open(path, checkFileInfo)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, MaxPluginSize+1))
	if err != nil {
		return nil, err
	}
	if n > MaxPluginSize {
		return nil, fmt.Errorf("more than the %d bytes a plugin may be (it grew while it was read)", MaxPluginSize)
	}
	return h.Sum(nil), nil
}

// Bounds of a directory's manifest: a line per plugin, "SHA256  NAME"
// (64 hex digits, two spaces and a file name of at most 255 bytes).
const (
	MaxManifestSize = 1 << 20
	MaxManifestLine = 4096
)

// readManifest reads dir's checksum manifest (none: no checksums). It
// reads at most MaxManifestSize bytes, lines of at most MaxManifestLine,
// and only from a regular file (a FIFO would block the open); errors
// name the file and the line.
func readManifest(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	path := filepath.Join(dir, Manifest)
	f, err := regfile.Open(path, func(st fs.FileInfo) error {
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file (%s)", path, regfile.Kind(st.Mode()))
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, tooBig, err := regfile.ReadAll(f, MaxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	text := string(data)
	for n := 1; text != ""; n++ {
		line, rest, whole := strings.Cut(text, "\n")
		if len(line) > MaxManifestLine {
			return nil, fmt.Errorf("%s:%d: line longer than %d bytes", path, n, MaxManifestLine)
		}
		if !whole && tooBig {
			break // cut by the bound, not the file's last line
		}
		text = rest
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		sum, err := hex.DecodeString(fields[0])
		if len(fields) != 2 || err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("%s:%d: want \"SHA256  FILE\"", path, n)
		}
		out[fields[1]] = sum
	}
	if tooBig {
		return nil, fmt.Errorf("%s: larger than %d bytes (a line per plugin)", path, MaxManifestSize)
	}
	return out, nil
}

// Add copies the plugin at path into dir and records its checksum in
// dir's manifest. path must be a plugin: named for one, a regular
// executable file that starts as a program does (an ELF, Mach-O or PE
// header, or "#!"), and one that answers the handshake and serves the
// kind its name says (Start, as `txlab plugin test` starts it, with o's
// log settings). Nothing is made or written in dir until those checks
// pass and dir's manifest reads; the plugin and the manifest are each
// replaced whole (a temporary file renamed).
func Add(dir, path string, o Options) (string, error) {
	f, err := found(path)
	if err != nil {
		return "", err
	}
	if err := checkProgram(path); err != nil {
		return "", err
	}
	sums, err := readManifest(dir)
	if err != nil {
		return "", err
	}
	if f.Sum, err = fileSum(path); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	run := f
	if run.Path, err = filepath.Abs(path); err != nil { // "txlab-qdisc-x" is a file here, not one on $PATH
		return "", err
	}
	p, err := Start(run, o)
	if err != nil {
		return "", err
	}
	p.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(f.Path))
	sum, err := copyFile(path, dst, 0o755)
	if err != nil {
		return "", err
	}
	if !slices.Equal(sum, f.Sum) {
		os.Remove(dst)
		return "", fmt.Errorf("%s changed while it was added: add it again", path)
	}
	sums[filepath.Base(dst)] = sum
	var sb strings.Builder
	for _, name := range slices.Sorted(maps.Keys(sums)) {
		fmt.Fprintf(&sb, "%x  %s\n", sums[name], name)
	}
	return dst, writeFile(filepath.Join(dir, Manifest), []byte(sb.String()), 0o644)
}

// checkProgram refuses a file that cannot be a plugin: not a regular
// file, not executable, or not starting as a program does.
func checkProgram(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s): a plugin is a program", path, regfile.Kind(st.Mode()))
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable (mode %s): a plugin is a program (chmod +x it if it is one)", path, st.Mode().Perm())
	}
	fd, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fd.Close()
	head := make([]byte, 4)
	n, _ := io.ReadFull(fd, head)
	if head = head[:n]; !isProgram(head) {
		return fmt.Errorf("%s is not a program: it starts with %q, not an ELF, Mach-O or PE header or \"#!\"", path, head)
	}
	return nil
}

// isProgram: head (a file's first 4 bytes) is an executable's magic
// number or a script's "#!".
func isProgram(head []byte) bool {
	for _, magic := range []string{
		"\x7fELF",                              // ELF
		"\xfe\xed\xfa\xce", "\xfe\xed\xfa\xcf", // Mach-O, big-endian
		"\xce\xfa\xed\xfe", "\xcf\xfa\xed\xfe", // Mach-O, little-endian
		"\xca\xfe\xba\xbe", // Mach-O universal
		"MZ",               // PE
		"#!",
	} {
		if strings.HasPrefix(string(head), magic) {
			return true
		}
	}
	return false
}

// copyFile copies src to dst through a temporary file in dst's
// directory, renamed over dst once whole, and returns the sha256 of what
// it copied.
func copyFile(src, dst string, perm os.FileMode) ([]byte, error) {
	in, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	var n int64
	n, err = io.Copy(io.MultiWriter(tmp, h), io.LimitReader(in, MaxPluginSize+1))
	if err == nil && n > MaxPluginSize {
		err = fmt.Errorf("%s: more than the %d bytes a plugin may be", src, MaxPluginSize)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	return h.Sum(nil), nil
}

// writeFile writes b to path through a temporary file renamed over it.
func writeFile(path string, b []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
