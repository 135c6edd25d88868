package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/filesystem"
)

// tmpPrefix starts the name of a file an Upload is still writing. Listings skip such files:
// one left by a crash is an orphan no listing shows (see fileBucket).
const tmpPrefix = ".strom-tmp-"

// fileBucket is thanos' filesystem bucket with an atomic Upload: thanos writes the object in
// place, so a crash or a concurrent reader sees a partial file under the final name. Here the
// bytes go to a temporary file in the same directory, which is synced, renamed over the name
// and the directory synced: after a crash the name holds the old object or the whole new one.
// The on-disk layout is otherwise thanos' (key = path below root), which official clients open
// directly (ClientPath).
type fileBucket struct {
	*filesystem.Bucket
	root string
}

func (b *fileBucket) Upload(ctx context.Context, name string, r io.Reader, _ ...objstore.ObjectUploadOption) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dst := filepath.Join(b.root, filepath.FromSlash(path.Clean("/"+name)))
	if dst == b.root {
		return fmt.Errorf("remote: upload: empty object name")
	}
	dir := filepath.Dir(dst)
	var f *os.File
	var err error
	// A concurrent Delete of the directory's last object removes the directory (thanos
	// prunes empty parents): recreate it and try again.
	for range 3 {
		if err = os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("remote: upload %s: %w", name, err)
		}
		f, err = os.CreateTemp(dir, tmpPrefix+filepath.Base(dst)+"-*")
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("remote: upload %s: %w", name, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := io.Copy(f, r); err != nil {
		return fmt.Errorf("remote: upload %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("remote: upload %s: sync: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("remote: upload %s: %w", name, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("remote: upload %s: %w", name, err)
	}
	ok = true
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("remote: upload %s: sync dir: %w", name, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func isTmp(name string) bool {
	return strings.HasPrefix(path.Base(strings.TrimSuffix(name, "/")), tmpPrefix)
}

func (b *fileBucket) Iter(ctx context.Context, dir string, f func(string) error, opts ...objstore.IterOption) error {
	return b.Bucket.Iter(ctx, dir, func(name string) error {
		if isTmp(name) {
			return nil
		}
		return f(name)
	}, opts...)
}

func (b *fileBucket) IterWithAttributes(ctx context.Context, dir string, f func(objstore.IterObjectAttributes) error, opts ...objstore.IterOption) error {
	return b.Bucket.IterWithAttributes(ctx, dir, func(a objstore.IterObjectAttributes) error {
		if isTmp(a.Name) {
			return nil
		}
		return f(a)
	}, opts...)
}
