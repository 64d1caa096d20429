package httpapi

import (
	"context"
	"sort"
	"sync"
	"time"
)

// cacheSize bounds the recent events kept in memory for live streams.
const cacheSize = 4096

// feedCache holds the newest events of the feed, so that live streams,
// however many, are served from memory: one reader goes to the store per
// commit, not one per stream.
type feedCache struct {
	feed FeedStore

	refresh   sync.Mutex      // one store read at a time
	refreshed <-chan struct{} // Feed.Changed as of the last read: open means nothing new since
	polled    time.Time       // the last read not prompted by this process

	mu     sync.Mutex // guards events and last
	events []Event    // ascending ids, at most cacheSize
	last   int64      // the newest id read; events may start later
	primed bool
}

// prime starts the cache at the store's newest id.
func (c *feedCache) prime(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.primed {
		return nil
	}
	_, newest, err := c.feed.Bounds(ctx)
	if err != nil {
		return err
	}
	c.last, c.primed = newest, true
	return nil
}

// update reads what the store committed since the last read, unless
// nothing was committed by this process since and poll is false.
func (c *feedCache) update(ctx context.Context, poll bool) error {
	c.refresh.Lock()
	defer c.refresh.Unlock()
	if c.refreshed != nil && !poll {
		select {
		case <-c.refreshed:
		default:
			return nil // no commit since the last read
		}
	}
	if poll && time.Since(c.polled) < pollInterval/2 {
		return nil
	}
	changed := c.feed.Changed()
	c.mu.Lock()
	after := c.last
	c.mu.Unlock()
	for {
		evs, err := c.feed.After(ctx, after, "", 500)
		if err != nil {
			return err
		}
		if len(evs) > 0 {
			c.mu.Lock()
			c.events = append(c.events, evs...)
			if n := len(c.events); n > cacheSize {
				c.events = append(c.events[:0:0], c.events[n-cacheSize:]...)
			}
			c.last = evs[len(evs)-1].ID
			after = c.last
			c.mu.Unlock()
		}
		if len(evs) < 500 {
			break
		}
	}
	c.refreshed = changed
	if poll {
		c.polled = time.Now()
	}
	return nil
}

// since returns the cached events after id for sessionID ("" for all);
// ok is false when the cache does not reach back that far.
func (c *feedCache) since(after int64, sessionID string) (evs []Event, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.primed {
		return nil, false
	}
	if after >= c.last {
		return nil, true
	}
	if len(c.events) == 0 || after < c.events[0].ID-1 {
		return nil, false
	}
	// Every commit wakes every stream, most of them a few events behind:
	// find the first new event rather than scan the whole cache.
	i := sort.Search(len(c.events), func(i int) bool { return c.events[i].ID > after })
	for _, e := range c.events[i:] {
		if sessionID == "" || e.SessionID == sessionID {
			evs = append(evs, e)
		}
	}
	return evs, true
}

// floor is the id the cache reaches back to: since(floor) is cached.
func (c *feedCache) floor() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.events) == 0 {
		return c.last
	}
	return c.events[0].ID - 1
}
