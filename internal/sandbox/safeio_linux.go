package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Open opens the regular file at path for reading after checking it
// against roots, then checks the opened file again, so that a symlink
// swapped in between cannot lead the read out of the roots. Relative paths
// resolve against the roots' cwd. Anything but a regular file (a FIFO, a
// device, a directory) is refused with ErrNotRegular before a read could
// block on it.
func Open(path string, roots *Roots) (*os.File, error) {
	return opener{}.open(path, roots)
}

// ReadFile reads the regular file at path, checked as Open checks it.
func ReadFile(path string, roots *Roots) ([]byte, error) {
	return opener{}.readFile(path, roots)
}

// OpenForWrite opens path for writing with flag (os.O_WRONLY, os.O_APPEND,
// os.O_CREATE, ...) after checking it against the writable roots; the
// directory and the file are opened without following symlinks and
// checked again once open.
func OpenForWrite(path string, flag int, perm fs.FileMode, roots *Roots) (*os.File, error) {
	return opener{}.openForWrite(path, flag, perm, roots)
}

// WriteFileAtomic replaces the file at path with data: it writes a
// temporary file in the same directory and renames it over path, both
// relative to a directory opened without following symlinks and checked
// against the writable roots, so a reader never sees half a file and a
// swapped symlink cannot redirect the write. An existing file keeps its
// mode; a new one gets 0644 less the umask. Missing parent directories
// are created.
func WriteFileAtomic(path string, data []byte, roots *Roots) error {
	return opener{}.writeFileAtomic(path, data, roots)
}

// opener carries the knobs tests use to reach the paths a race would take.
type opener struct {
	// noOpenat2 takes the fallback for kernels without openat2: open with
	// O_NOFOLLOW, then check /proc/self/fd.
	noOpenat2 bool
	// afterCheck runs between the roots check and the open.
	afterCheck func()
}

func (o opener) checked() {
	if o.afterCheck != nil {
		o.afterCheck()
	}
}

func (o opener) open(path string, roots *Roots) (*os.File, error) {
	canon, err := roots.Resolve(path, "", false)
	if err != nil {
		return nil, err
	}
	o.checked()
	fd, err := o.openNoSymlinks(unix.AT_FDCWD, canon, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, o.fail("open", path, canon, err, roots)
	}
	if err := verify(fd, path, roots, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), canon)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, NotRegular("open", path, fi.Mode())
	}
	// O_NONBLOCK kept a FIFO from blocking the open; reads should block.
	if err := unix.SetNonblock(fd, false); err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return f, nil
}

func (o opener) readFile(path string, roots *Roots) ([]byte, error) {
	f, err := o.open(path, roots)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

func (o opener) openForWrite(path string, flag int, perm fs.FileMode, roots *Roots) (*os.File, error) {
	canon, err := roots.Resolve(path, "", true)
	if err != nil {
		return nil, err
	}
	o.checked()
	dirfd, err := o.openDir(filepath.Dir(canon), path, roots)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, filepath.Base(canon), flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, o.fail("open", path, canon, err, roots)
	}
	if err := verify(fd, path, roots, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), canon), nil
}

func (o opener) writeFileAtomic(path string, data []byte, roots *Roots) (err error) {
	canon, err := roots.Resolve(path, "", true)
	if err != nil {
		return err
	}
	if err := o.mkdirAll(filepath.Dir(canon), path, roots); err != nil {
		return err
	}
	o.checked()
	dirfd, err := o.openDir(filepath.Dir(canon), path, roots)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	name := filepath.Base(canon)

	mode := uint32(0o644)
	keep := false
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return fmt.Errorf("write %s: %w", path, err)
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return roots.escape(path, ReasonChanged)
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("write %s: %w", path, ErrNotRegular)
	default:
		mode, keep = st.Mode&0o7777, true
	}

	tmp, err := tempName(name)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// Noted before it exists, forgotten once renamed or removed: a crash
	// in between leaves a note the next start cleans up after.
	defer roots.noteTemp(filepath.Join(filepath.Dir(canon), tmp))()
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	defer func() {
		if err != nil {
			unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	if keep {
		// The umask applied at create; an existing file keeps its mode whole.
		if err := unix.Fchmod(fd, mode); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// mkdirAll creates the missing directories of dir, each inside a parent
// opened without following symlinks and checked against the roots.
func (o opener) mkdirAll(dir, path string, roots *Roots) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("create directories for %s: %w", path, err)
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		parent, err := o.openDir(filepath.Dir(d), path, roots)
		if err != nil {
			return err
		}
		err = unix.Mkdirat(parent, filepath.Base(d), 0o755)
		unix.Close(parent)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("create directories for %s: %w", path, err)
		}
	}
	return nil
}

// openDir opens the canonical directory dir without following any
// symlink and checks the result is in the writable roots.
func (o opener) openDir(dir, path string, roots *Roots) (int, error) {
	fd, err := o.openNoSymlinks(unix.AT_FDCWD, dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, o.fail("open directory of", path, dir, err, roots)
	}
	if err := verify(fd, path, roots, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// openNoSymlinks opens the canonical path p refusing every symlink on the
// way (openat2 RESOLVE_NO_SYMLINKS), or, where openat2 is missing, the
// symlink of the last component only; verify then catches the rest.
func (o opener) openNoSymlinks(dirfd int, p string, flags int, mode uint32) (int, error) {
	flags |= unix.O_CLOEXEC
	if !o.noOpenat2 {
		fd, err := unix.Openat2(dirfd, p, &unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: unix.RESOLVE_NO_SYMLINKS})
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
			return fd, err
		}
	}
	return unix.Openat(dirfd, p, flags|unix.O_NOFOLLOW, mode)
}

// fail turns an open error into an *EscapeError when a symlink appeared
// where the check saw none.
func (o opener) fail(op, path, canon string, err error, roots *Roots) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return roots.escape(path, ReasonChanged)
	}
	// O_NOFOLLOW|O_DIRECTORY on a symlink fails with ENOTDIR.
	if fi, lerr := os.Lstat(canon); errors.Is(err, unix.ENOTDIR) && lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return roots.escape(path, ReasonChanged)
	}
	return fmt.Errorf("%s %s: %w", op, path, &fs.PathError{Op: "open", Path: canon, Err: err})
}

// verify checks where the open fd really is, through /proc/self/fd.
func verify(fd int, path string, roots *Roots, write bool) error {
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return fmt.Errorf("verify %s: %w", path, err)
	}
	if !filepath.IsAbs(real) || !roots.Contains(real, write) {
		return roots.escape(path, ReasonChanged)
	}
	return nil
}

func tempName(name string) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "." + name + ".meka-" + hex.EncodeToString(b[:]) + ".tmp", nil
}
