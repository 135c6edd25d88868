package remote

import (
	"context"
	"io"
	"sync"

	"github.com/thanos-io/objstore"
)

// limitBucket bounds the operations in flight on a store. Each call holds one of n slots
// while it runs; a reader from Get or GetRange holds its slot until it is closed or read to
// its end. So a caller must not keep n readers open while it starts another operation on the
// same store. A call waiting for a slot gives up when its context is done.
type limitBucket struct {
	objstore.Bucket
	slots chan struct{}
}

func newLimitBucket(b objstore.Bucket, n int) *limitBucket {
	return &limitBucket{Bucket: b, slots: make(chan struct{}, n)}
}

func (b *limitBucket) acquire(ctx context.Context) error {
	select {
	case b.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *limitBucket) release() { <-b.slots }

func (b *limitBucket) Upload(ctx context.Context, name string, r io.Reader, opts ...objstore.ObjectUploadOption) error {
	if err := b.acquire(ctx); err != nil {
		return err
	}
	defer b.release()
	return b.Bucket.Upload(ctx, name, r, opts...)
}

func (b *limitBucket) Delete(ctx context.Context, name string) error {
	if err := b.acquire(ctx); err != nil {
		return err
	}
	defer b.release()
	return b.Bucket.Delete(ctx, name)
}

func (b *limitBucket) Iter(ctx context.Context, dir string, f func(string) error, opts ...objstore.IterOption) error {
	if err := b.acquire(ctx); err != nil {
		return err
	}
	defer b.release()
	return b.Bucket.Iter(ctx, dir, f, opts...)
}

func (b *limitBucket) IterWithAttributes(ctx context.Context, dir string, f func(objstore.IterObjectAttributes) error, opts ...objstore.IterOption) error {
	if err := b.acquire(ctx); err != nil {
		return err
	}
	defer b.release()
	return b.Bucket.IterWithAttributes(ctx, dir, f, opts...)
}

func (b *limitBucket) Exists(ctx context.Context, name string) (bool, error) {
	if err := b.acquire(ctx); err != nil {
		return false, err
	}
	defer b.release()
	return b.Bucket.Exists(ctx, name)
}

func (b *limitBucket) Attributes(ctx context.Context, name string) (objstore.ObjectAttributes, error) {
	if err := b.acquire(ctx); err != nil {
		return objstore.ObjectAttributes{}, err
	}
	defer b.release()
	return b.Bucket.Attributes(ctx, name)
}

func (b *limitBucket) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := b.acquire(ctx); err != nil {
		return nil, err
	}
	rc, err := b.Bucket.Get(ctx, name)
	if err != nil {
		b.release()
		return nil, err
	}
	return &slotReader{ReadCloser: rc, release: b.release}, nil
}

func (b *limitBucket) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if err := b.acquire(ctx); err != nil {
		return nil, err
	}
	rc, err := b.Bucket.GetRange(ctx, name, off, length)
	if err != nil {
		b.release()
		return nil, err
	}
	return &slotReader{ReadCloser: rc, release: b.release}, nil
}

// slotReader gives its slot back once, at EOF (or any error) or Close.
type slotReader struct {
	io.ReadCloser
	release func()
	once    sync.Once
}

func (r *slotReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != nil {
		r.once.Do(r.release)
	}
	return n, err
}

func (r *slotReader) Close() error {
	r.once.Do(r.release)
	return r.ReadCloser.Close()
}
