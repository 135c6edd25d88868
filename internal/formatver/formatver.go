// Package formatver versions Strom's persistent formats: the directories a server writes
// (a bucket's log, the KV store), the records it keeps in etcd and in remote storage. Each
// format has a name and the versions this binary reads; data written before formats were
// versioned carries no version and reads as version 1. A version the binary does not know
// is refused with an error that names the file or key, the version found and the versions
// supported, so that a rolled-back or too-old binary stops before it misreads newer data
// (docs/durability.md, "Versioned formats").
package formatver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// LegacyVersion is the version of data written before it carried a version.
const LegacyVersion = 1

// Format is one persistent format: Name identifies it in files and messages; Current is
// the version this binary writes; Supported lists every version it reads (Current
// included).
type Format struct {
	Name      string
	Current   int
	Supported []int
}

// Supports reports whether the binary reads version v of f.
func (f Format) Supports(v int) bool { return slices.Contains(f.Supported, v) }

// check returns an *UnsupportedError when f does not read version v found at where.
func (f Format) check(where string, v int) error {
	if f.Supports(v) {
		return nil
	}
	return &UnsupportedError{Where: where, Format: f.Name, Found: v, Supported: slices.Clone(f.Supported)}
}

// ErrUnsupported is what every *UnsupportedError matches with errors.Is.
var ErrUnsupported = errors.New("unsupported format version")

// UnsupportedError is the refusal of a version the binary does not read.
type UnsupportedError struct {
	Where     string // the file or key
	Format    string
	Found     int
	Supported []int
}

func (e *UnsupportedError) Error() string {
	vs := make([]string, len(e.Supported))
	for i, v := range e.Supported {
		vs[i] = strconv.Itoa(v)
	}
	return fmt.Sprintf("%s: %s format version %d is not supported by this binary (it reads versions %s); "+
		"the data was written by a newer Strom: run that version, or a newer one", e.Where, e.Format, e.Found, strings.Join(vs, ", "))
}

// Is makes errors.Is(err, ErrUnsupported) hold.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// FileName is the name of the format file in a versioned directory.
const FileName = "STROM_FORMAT"

// dirFile is the content of a format file.
type dirFile struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

// OpenDir checks the format file of dir (which must exist) against f and returns the
// version of the data in it. A directory without a format file holds legacy data (or
// nothing yet): it reads as LegacyVersion, and the file is written so that the version is
// on disk from now on. A file for another format, or one that does not parse, is refused:
// the directory is not what the caller thinks it is.
func OpenDir(dir string, f Format) (int, error) {
	path := filepath.Join(dir, FileName)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := writeDirFile(path, dirFile{Format: f.Name, Version: LegacyVersion}); err != nil {
			return 0, err
		}
		return LegacyVersion, f.check(path, LegacyVersion)
	case err != nil:
		return 0, fmt.Errorf("read format file: %w", err)
	}
	var df dirFile
	if err := json.Unmarshal(b, &df); err != nil {
		return 0, fmt.Errorf("%s: format file does not parse: %w", path, err)
	}
	if df.Format != f.Name {
		return 0, fmt.Errorf("%s: directory holds format %q, expected %q", path, df.Format, f.Name)
	}
	return df.Version, f.check(path, df.Version)
}

// writeDirFile writes a format file atomically (temp file, fsync, rename, fsync of the
// directory), so that a crash leaves either no file or a whole one.
func writeDirFile(path string, df dirFile) error {
	b, err := json.Marshal(df)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write format file: %w", err)
	}
	_, err = fh.Write(append(b, '\n'))
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write format file %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteDir records version v of f in dir's format file, replacing what is there. It is
// for a migration that has rewritten the directory to v, and for tests.
func WriteDir(dir string, f Format, v int) error {
	return writeDirFile(filepath.Join(dir, FileName), dirFile{Format: f.Name, Version: v})
}

// RecordVersion returns the version of a JSON record: its "format_version" member, or
// LegacyVersion when it has none. where names the key or file in the error.
func RecordVersion(where string, data []byte, f Format) (int, error) {
	var head struct {
		Version *int `json:"format_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return 0, fmt.Errorf("%s: %s record does not parse: %w", where, f.Name, err)
	}
	v := LegacyVersion
	if head.Version != nil {
		v = *head.Version
	}
	return v, f.check(where, v)
}

// Check refuses version v of f found at where when the binary does not read it; for
// formats whose version lives in a field of their own (a header, a manifest).
func Check(where string, f Format, v int) error { return f.check(where, v) }
