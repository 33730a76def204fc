package plugin

// Finding and verifying plugins: the options a run names them with,
// their file names, the directory's checksum manifest.

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
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
			if s, ok := sums[e.Name()]; ok {
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
	f.Sum, err = fileSum(path)
	return f, err
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

func fileSum(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

func readManifest(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	f, err := os.Open(filepath.Join(dir, Manifest))
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		sum, err := hex.DecodeString(fields[0])
		if len(fields) != 2 || err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("%s:%d: want \"SHA256  FILE\"", filepath.Join(dir, Manifest), n)
		}
		out[fields[1]] = sum
	}
	return out, sc.Err()
}

// Add copies the plugin at path into dir and records its checksum.
func Add(dir, path string) (string, error) {
	f, err := found(path)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(f.Path))
	if err := os.WriteFile(dst+".tmp", b, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		return "", err
	}
	sums, err := readManifest(dir)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	sums[filepath.Base(dst)] = s[:]
	var sb strings.Builder
	for _, name := range slices.Sorted(maps.Keys(sums)) {
		fmt.Fprintf(&sb, "%x  %s\n", sums[name], name)
	}
	return dst, os.WriteFile(filepath.Join(dir, Manifest), []byte(sb.String()), 0o644)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
