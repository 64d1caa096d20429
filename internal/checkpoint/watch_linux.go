package checkpoint

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// watcher is an inotify instance watching the directories of one root.
// It is non-blocking and read only within a snapshot, under the store's
// mutex: no goroutine.
type watcher struct {
	fd  int
	wds map[int32]*dirNode
	buf []byte
}

func newWatcher() (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: inotify: %w", err)
	}
	return &watcher{fd: fd, wds: map[int32]*dirNode{}, buf: make([]byte, 64<<10)}, nil
}

func (w *watcher) close() { unix.Close(w.fd) }

const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// localFS are the filesystems every change of which goes through this
// kernel; a network or FUSE filesystem can change with no event here.
var localFS = map[int64]bool{
	unix.EXT4_SUPER_MAGIC: true, unix.XFS_SUPER_MAGIC: true, unix.BTRFS_SUPER_MAGIC: true,
	unix.TMPFS_MAGIC: true, unix.F2FS_SUPER_MAGIC: true, unix.BCACHEFS_SUPER_MAGIC: true,
	unix.OVERLAYFS_SUPER_MAGIC: true, unix.RAMFS_MAGIC: true, unix.REISERFS_SUPER_MAGIC: true,
	unix.NILFS_SUPER_MAGIC: true, unix.EXFAT_SUPER_MAGIC: true, unix.MSDOS_SUPER_MAGIC: true,
	0x2fc12fc1: true, // zfs
}

// add watches the directory of n.
func (w *watcher) add(n *dirNode, abs string) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(abs, &fs); err != nil {
		return &os.PathError{Op: "statfs", Path: abs, Err: err}
	}
	if !localFS[int64(fs.Type)] {
		return errRemoteFS
	}
	wd, err := unix.InotifyAddWatch(w.fd, abs, watchMask)
	if err == unix.ENOSPC {
		return errWatchLimit
	}
	if err != nil {
		return &os.PathError{Op: "inotify_add_watch", Path: abs, Err: err}
	}
	// A directory watched already (listed again, or moved) keeps its
	// watch, which now reports for n.
	if old, ok := w.wds[int32(wd)]; ok {
		old.wd = -1
	}
	w.wds[int32(wd)] = n
	n.wd = wd
	return nil
}

// remove drops the watch of n unless another node took it over.
func (w *watcher) remove(n *dirNode) {
	if n.wd < 0 || w.wds[int32(n.wd)] != n {
		return
	}
	unix.InotifyRmWatch(w.fd, uint32(n.wd))
	delete(w.wds, int32(n.wd))
	n.wd = -1
}

// drain reads the events queued, to the end, and marks what they name.
// The kernel queues a change's events before the call that made it
// returns, so every change finished before the drain is among them. lose
// drops them as an overflowed queue does.
func (w *watcher) drain(t *tracked, lose bool) error {
	if lose {
		t.root = nil
	}
	for {
		n, err := unix.Read(w.fd, w.buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return nil
		case err != nil:
			return fmt.Errorf("checkpoint: read inotify: %w", err)
		}
		if lose {
			continue
		}
		for b := w.buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			wd := int32(binary.NativeEndian.Uint32(b[0:]))
			mask := binary.NativeEndian.Uint32(b[4:])
			l := int(binary.NativeEndian.Uint32(b[12:]))
			name := b[unix.SizeofInotifyEvent : unix.SizeofInotifyEvent+l]
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			b = b[unix.SizeofInotifyEvent+l:]
			w.event(t, wd, mask, string(name))
		}
	}
}

func (w *watcher) event(t *tracked, wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		t.root = nil
		return
	}
	n, ok := w.wds[wd]
	if !ok {
		return // a watch removed since
	}
	switch {
	case name != "":
		ch := changeAttr
		if mask&(unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 {
			ch = changeEntry
		}
		t.mark(n, name, ch)
	case mask&unix.IN_IGNORED != 0:
		delete(w.wds, wd)
		n.wd = -1
		t.lost(n)
	case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_UNMOUNT) != 0:
		t.lost(n)
	case n.parent == nil:
		t.root = nil // the root's own metadata
	default:
		t.mark(n.parent, n.name, changeAttr)
	}
}
