package checkpoint

import "context"

// TrustStat lets the stat cache vouch for files however recently written.
func TrustStat(s *Store) { s.racy = 0 }

// RacyWindow is how old a file must be for the stat cache to vouch for it.
const RacyWindow = racyWindow

// Files lists the files a point recorded of root, slash-separated.
func Files(s *Store, p Point, root string) ([]string, error) {
	r, err := s.repo(context.Background(), root)
	if err != nil {
		return nil, err
	}
	to, err := parseOID(p.Trees[root])
	if err != nil {
		return nil, err
	}
	var out []string
	err = r.objs.walkDiff(oid{}, to, "", func(path string, _, _ file) error {
		out = append(out, path)
		return nil
	})
	return out, err
}

// Wildmatch is git's wildmatch, with WM_PATHNAME.
func Wildmatch(pat, text string) bool { return wildmatch(pat, text, true) }

// LoseEvents makes each root's next snapshot lose the events queued, as
// an overflowed inotify queue does.
func LoseEvents(s *Store) {
	for _, r := range s.repos {
		if r.track != nil {
			r.track.overflow = true
		}
	}
}

// FullScan says whether the last snapshot listed every directory of some
// root instead of only what the watcher reported.
func FullScan(s *Store) bool {
	for _, r := range s.repos {
		if r.track == nil || r.track.lastFull {
			return true
		}
	}
	return false
}
