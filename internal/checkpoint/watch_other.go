//go:build !linux

package checkpoint

// watcher watches nothing here: every snapshot is a full scan.
type watcher struct{}

func newWatcher() (*watcher, error)           { return nil, errUnsupported }
func (w *watcher) close()                     {}
func (w *watcher) add(*dirNode, string) error { return errUnsupported }
func (w *watcher) remove(*dirNode)            {}
func (w *watcher) drain(*tracked, bool) error { return nil }
